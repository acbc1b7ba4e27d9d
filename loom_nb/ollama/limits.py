"""The limits of an Ollama call, and where a client goes (no imports of the client itself:
the errors module needs these too)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..core.config import LoomConfig
from ..core.errors import OllamaTimeoutError

DEFAULT_HOST = "http://127.0.0.1:11434"


def host_of(host: str | None) -> str:
    """Where a client for ``host`` goes: ``host``, else ``OLLAMA_HOST``, else localhost:11434."""
    return host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


@dataclass(frozen=True)
class Timeouts:
    """The three limits of an Ollama call, in seconds, and the config fields they come from.

    >>> Timeouts(1.0, 30.0, 5.0).httpx().read
    30.0
    """

    connect: float
    first_token: float
    idle: float

    SETTINGS = {"connect": "ollama_connect_timeout", "first_token": "ollama_first_token_timeout",
                "idle": "ollama_idle_timeout"}
    """The :class:`~loom_nb.core.config.LoomConfig` field behind each limit (what an error names)."""

    OPTIONS = {"connect": "--connect-timeout", "first_token": "--first-token-timeout", "idle": "--idle-timeout"}
    """The ``loom-nb chat`` option that sets each limit (a command-line user cannot set the config)."""

    @classmethod
    def from_config(cls, config: LoomConfig | None = None) -> "Timeouts":
        """The limits a config sets (the defaults of :class:`LoomConfig` without one)."""
        config = config or LoomConfig()
        return cls(float(config.ollama_connect_timeout), float(config.ollama_first_token_timeout),
                   float(config.ollama_idle_timeout))

    @property
    def answer(self) -> str:
        """Which limit bounds a call that does not stream (the client's read timeout)."""
        return "first_token" if self.first_token >= self.idle else "idle"

    def seconds(self, which: str) -> float:
        return float(getattr(self, which))

    def httpx(self):
        """An ``httpx.Timeout``: connect as set; reading and writing up to the longer limit."""
        import httpx

        longest = max(self.first_token, self.idle)
        return httpx.Timeout(connect=self.connect, read=longest, write=longest, pool=self.connect)

    def error(self, which: str, host: str | None, what: str) -> OllamaTimeoutError:
        """The one-line error for running past limit ``which`` while ``what`` was happening."""
        seconds = self.seconds(which)
        setting = self.SETTINGS[which]
        advice = {
            "connect": "check the host, or raise it",
            "first_token": "raise it for a cold model load or a long prompt on a CPU",
            "idle": "raise it if the model is only slow",
        }[which]
        return OllamaTimeoutError(f"Ollama at {host_of(host)} {what} within {seconds:g} s "
                                  f"(LoomConfig.{setting}, or `loom-nb chat {self.OPTIONS[which]} SECONDS`; {advice})",
                                  setting=setting, seconds=seconds)
