"""`rebench-service NAME [JSON]`: call a run's trusted service from inside the sandbox.

Runs inside sandboxes from the child runtime with `python -I -S`: standard library only.
The request is the JSON argument (or stdin when it is `-` or missing); the reply is printed
as JSON; the exit status is 0 when the reply says ok.
"""

from __future__ import annotations

import json
import os
import socket
import sys

# Set by the sandbox for the code inside it (sandbox/local.py, bwrap.py); read there, it is
# the sandbox's interface, not a harness setting (core/paths.py reads those).
SERVICES_ENV = "REBENCH_SERVICES"
# Where a run's service sockets appear inside a sandbox (services/host.py serves them).
SERVICES_MOUNT = "/run/rebench-services"
TIMEOUT_S = 3600.0


def call(name: str, request: object, timeout: float = TIMEOUT_S) -> dict[str, object]:
    """Send `request` to service `name`; its reply."""
    folder = os.environ.get(SERVICES_ENV, "")
    path = os.path.join(folder, f"{name}.sock")
    if not folder or not os.path.exists(path):
        known = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".sock")) \
            if folder and os.path.isdir(folder) else []
        return {"ok": False, "error": f"no service {name!r} in this run (services: "
                                      f"{', '.join(known) or 'none'})"}
    return request_over_socket(path, request, timeout)


def request_over_socket(path: str, request: object, timeout: float) -> dict[str, object]:
    """One request to the service socket at `path`; its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    reply = json.loads(data) if data else {"ok": False, "error": "no reply"}
    return reply if isinstance(reply, dict) else {"ok": False, "error": "malformed reply"}


def main(argv: list[str]) -> int:
    """Entry point; returns the exit status."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: rebench-service NAME [JSON | -]", file=sys.stderr)
        return 0 if argv else 2
    text = argv[1] if len(argv) > 1 and argv[1] != "-" else sys.stdin.read()
    try:
        request = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        print(f"rebench-service: the request is not JSON ({exc})", file=sys.stderr)
        return 2
    try:
        reply = call(argv[0], request)
    except (OSError, ValueError) as exc:
        print(f"rebench-service: the harness did not answer ({exc})", file=sys.stderr)
        return 1
    print(json.dumps(reply, indent=2))
    return 0 if reply.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
