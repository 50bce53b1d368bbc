"""Escaping for the HTML the UI builds: everything that came from the web or from a model is
escaped, and only http(s) URLs become links (a page title can hold a ``<script>``)."""

from __future__ import annotations

import html
from urllib.parse import urlsplit


def esc(text: object) -> str:
    """HTML-escaped text (quotes too, so it is safe inside attributes)."""
    return html.escape("" if text is None else str(text), quote=True)


def safe_url(url: str) -> str | None:
    """The URL if it is http(s) (anything else, e.g. ``javascript:``, never becomes a link)."""
    try:
        parts = urlsplit((url or "").strip())
    except ValueError:
        return None
    return url.strip() if parts.scheme in ("http", "https") and parts.netloc else None


def link(url: str, title: str = "") -> str:
    """An escaped link that opens in a new tab, or escaped text for a URL that is not http(s)."""
    label = esc(title or url)
    href = safe_url(url)
    if href is None:
        return f"<span class='rat-nolink'>{label}</span>"
    return f"<a href='{esc(href)}' target='_blank' rel='noopener noreferrer nofollow'>{label}</a>"
