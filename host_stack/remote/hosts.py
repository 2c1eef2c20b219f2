"""What a launcher needs to know of a host: how SSH reaches it, or which namespace it is, and
the ``ssh:`` defaults block that inventories and servers files share."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from control_plane.yamlfile import Fields


@dataclass(frozen=True)
class SshSpec:
    """How to reach a host over SSH."""

    address: str
    user: str
    port: int = 22
    key: str | None = None
    options: tuple[str, ...] = ()  # extra ``-o`` options, e.g. UserKnownHostsFile=...


@dataclass(frozen=True)
class HostSpec:
    """One worker or PS: its node id, role, data-plane interface and how to reach it."""

    name: str
    role: str
    interface: str
    launcher: str
    python: str
    repo: str
    ssh: SshSpec | None = None
    netns: str | None = None

    def describe(self) -> str:
        if self.ssh is not None:
            return f"host '{self.name}' ({self.ssh.user}@{self.ssh.address})"
        return f"host '{self.name}' (netns {self.netns})"


def ssh_defaults(fields: type[Fields], path: Path, doc: object) -> dict[str, Any]:
    """The file's ``ssh:`` block (user, port, key, options), read with ``fields``' errors."""
    f = fields(path, "ssh", doc or {}, ("user", "port", "key", "options"))
    options = f.doc.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) and "=" in o
                                                for o in options):
        raise f.error("options", f"{options!r}: expected a list of 'Name=value' strings")
    return {"user": f.text("user", getpass.getuser()), "port": f.integer("port", 22, 1, 65535),
            "key": f.text("key"), "options": tuple(options)}
