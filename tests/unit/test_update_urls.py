"""Which URLs the updater may fetch: https anywhere, plain http only on loopback."""

import pytest

from om.errors import OmError
from om.selfupdate.github import check_url


@pytest.mark.parametrize("url", [
    "https://api.github.com", "https://ghe.example.com/api/v3", "http://127.0.0.1:8080",
    "http://127.3.4.5/x", "http://[::1]:9/", "http://localhost:5000/releases", "http://LOCALHOST",
])
def test_https_anywhere_and_http_on_loopback_are_allowed(url):
    assert check_url(url) == url


@pytest.mark.parametrize("url", [
    "http://example.com", "http://api.github.com", "http://10.0.0.1", "http://0.0.0.0",
    "http://evil.localhost", "http://localhost.example.com", "http://127.0.0.1.example.com",
    "http://[::ffff:8.8.8.8]", "ftp://127.0.0.1/x", "file:///etc/passwd", "https://", "api.github.com",
])
def test_everything_else_is_refused(url):
    with pytest.raises(OmError, match="only https"):
        check_url(url)
