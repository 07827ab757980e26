"""Broker URLs: parsing an endpoint and hiding credentials (URLs end up in messages and reports)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import attrs


@attrs.frozen
class Endpoint:
    """Where a broker listens and how to log in (user None: the adapter's default)."""

    host: str
    port: int
    user: str | None = None
    password: str | None = None

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.user, self.password or "") if self.user else None


def parse_endpoint(url: str, scheme: str, default_port: int) -> Endpoint:
    """host, port and credentials of `url` (``scheme://[user:password@]host[:port]``; the scheme
    may be left out)."""
    parts = urlsplit(url if "://" in url else f"{scheme}://{url}")
    return Endpoint(parts.hostname or "127.0.0.1", parts.port or default_port,
                    parts.username or None, parts.password)


def redact(url: str) -> str:
    """`url` with its password replaced by ``***`` (the user name stays); unchanged without one."""
    if "://" not in url and "@" in url:  # host:port form with credentials
        return redact(f"x://{url}")[4:]
    try:
        parts = urlsplit(url)
        password = parts.password
        port = parts.port
    except ValueError:  # not a URL one can take apart: say nothing of it that could be a secret
        return "<malformed url>" if "@" in url else url
    if password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if port is not None:
        host = f"{host}:{port}"
    user = parts.username or ""
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))
