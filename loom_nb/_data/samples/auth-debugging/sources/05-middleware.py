"""Request middleware: attach the bearer token, refresh on expiry, map auth errors to 401."""

from .token_refresh import refresh


def auth_middleware(request, store, client_id):
    if store.expired():
        try:
            refresh(store, client_id)
        except PermissionError as exc:
            return {"status": 401, "error": str(exc)}
    request.headers["Authorization"] = f"Bearer {store.access_token}"
    return None
