"""Refreshing OAuth access tokens for the web dashboard."""

import threading
import time

import requests

TOKEN_URL = "https://auth.example.com/oauth/token"


class TokenStore:
    """Holds the access and refresh token of one user session."""

    def __init__(self, access_token, refresh_token, expires_at):
        self.access_token = access_token
        self.refresh_token = refresh_token
        self.expires_at = expires_at

    def expired(self, now=None):
        return (now or time.time()) >= self.expires_at


def refresh(store, client_id):
    """Exchange the refresh token for a new access token.

    The auth server rotates refresh tokens: each refresh token works once, and the
    response carries the next one. Two concurrent calls with the same refresh token
    make the second one fail with invalid_grant.
    """
    response = requests.post(
        TOKEN_URL,
        data={"grant_type": "refresh_token", "refresh_token": store.refresh_token, "client_id": client_id},
        timeout=10,
    )
    if response.status_code != 200:
        raise PermissionError(response.json().get("error", "refresh failed"))
    body = response.json()
    store.access_token = body["access_token"]
    store.expires_at = time.time() + body["expires_in"]
    # BUG: the rotated refresh token in body["refresh_token"] is not stored
    return store
