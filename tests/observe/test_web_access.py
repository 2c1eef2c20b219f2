"""`inart serve --web` off loopback: the service's rules (a token, and TLS unless
--insecure) hold for the web view too; over TLS a request without the token gets 401."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from control_plane.repo import REPO, child_env
from tests.foreground import inart_foreground
from tests.service.test_auth import TOKEN, self_signed


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "control_plane.cli", "serve", "--switches",
                           "memory", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env=child_env())


def test_web_off_loopback_without_a_token_is_bad_input(tmp_path: Path) -> None:
    done = serve("--state", str(tmp_path / "s"), "--web", "0.0.0.0:0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--web '0.0.0.0:0': not a loopback address" in done.stdout


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_web_over_tls_wants_the_token(tmp_path: Path) -> None:
    key, cert = self_signed(tmp_path)
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    with inart_foreground("serve", "--switches", "memory", "--state", str(tmp_path / "s"),
                          "--listen", "0.0.0.0:0", "--token-file", str(token), "--tls-cert",
                          cert, "--tls-key", key, "--web", "0.0.0.0:0") as line:
        found = re.search(r"web view on https://0\.0\.0\.0:(\d+)/", line)
        assert found, line
        url = f"https://127.0.0.1:{found.group(1)}/api/state"
        trust = ssl.create_default_context(cafile=cert)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, context=trust, timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, context=trust, timeout=10) as reply:
            doc = json.load(reply)
        assert doc["source"] == "serve" and doc["jobs"] == []
        with pytest.raises(OSError):  # plaintext is not spoken there
            urllib.request.urlopen(url.replace("https", "http"), timeout=10)
