"""A throwaway multi-node Ray cluster on this machine, for the Ray executor's tests and benchmark.

Each node is its own `ray start --block` in a new session (setsid), so stopping or killing a node kills
exactly the processes of that session (raylet, agents and workers, which Ray puts in process groups of
their own), never another user's Ray. NB: Ray swaps 127.0.0.1 for the machine's
outward address, so the nodes listen on 127.0.0.2, which is loopback as well.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.2"
START_TIMEOUT_S = 120
STARTED = "Ray runtime started"
# the test cluster notices a dead node in ~3 s instead of Ray's default ~30 s
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3",
                          "RAY_health_check_timeout_ms": "1000"}


def free_port(taken: set[int]) -> int:
    """A port free now and not in `taken` (added to it): the kernel may hand a port just closed out again, and
    two components of one cluster on one port fail its start ("dashboard is trying to use a port number 43777
    that is used by other components", seen with the GCS on the same number)."""
    while True:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


def session_processes(session: int) -> dict[int, list[bytes]]:
    """pid -> arguments of every process in one session (Linux /proc; Ray workers show `ray::<task>`)."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.getsid(int(proc.name)) == session:
                found[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):  # gone meanwhile
            continue
    return found


def node_id_of(session: int) -> str | None:
    """The Ray node id its raylet was started with, to tell this node's rows apart."""
    for args in session_processes(session).values():
        for arg in args:
            if arg.startswith((b"--node_id=", b"--node-id=")):
                return arg.split(b"=", 1)[1].decode()
    return None


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    log: Path
    node_id: str | None = None

    def alive(self) -> bool:
        return self.process.poll() is None

    def running(self, task_name: str) -> bool:
        """Whether one of this node's workers is executing the remote function `task_name` now."""
        title = f"ray::{task_name}".encode()
        return any(args[0].startswith(title) for args in session_processes(self.process.pid).values())


class LocalRayCluster:
    """`with LocalRayCluster(head_cpus=1) as cluster: cluster.add_worker(1); ...`, then run drivers with
    address `cluster.address` and the variables `cluster.driver_env` in their environment."""

    def __init__(self, head_cpus: int = 1, env: dict | None = None):
        self.head_cpus = head_cpus
        # NB: a short root: Ray's unix sockets under it must fit in 107 characters
        self.temp_dir = Path(tempfile.mkdtemp(prefix="zr", dir="/tmp"))
        # Ray binds its ports on every interface: a token of this cluster's own, which drivers need as well
        # (Ray >= 2.5x reads these; ~/.ray/auth_token, if any, is not used)
        token = self.temp_dir / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        self.driver_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
        inherited = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_TOKEN")}
        self.env = {**inherited, "RAY_USAGE_STATS_ENABLED": "0", **FAST_FAILURE_DETECTION, **self.driver_env,
                    **(env or {})}
        self.ports: set[int] = set()       # every port this cluster was handed, so none is handed twice
        self.port = free_port(self.ports)
        self.address = f"{LOOPBACK}:{self.port}"
        self.nodes: list[Node] = []

    def __enter__(self) -> "LocalRayCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> Node:
        return self._start("head", ["--head", f"--port={self.port}", f"--num-cpus={self.head_cpus}",
                                    "--include-dashboard=false", f"--dashboard-port={free_port(self.ports)}"])

    def add_worker(self, num_cpus: int = 1, env: dict | None = None) -> Node:
        """A worker node; `env`, if given, on top of the cluster's environment for this node's processes alone."""
        return self._start(f"worker{len(self.nodes)}", [f"--address={self.address}", f"--num-cpus={num_cpus}"],
                           env)

    def _start(self, name: str, args: list[str], env: dict | None = None) -> Node:
        log = self.temp_dir / f"{name}.log"
        command = [str(Path(sys.executable).with_name("ray")), "start", "--block", *args,
                   f"--node-ip-address={LOOPBACK}", f"--temp-dir={self.temp_dir}", "--disable-usage-stats",
                   f"--dashboard-agent-listen-port={free_port(self.ports)}"]
        with open(log, "w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**self.env, **(env or {})},
                                       start_new_session=True)  # its own session: see kill()
        node = Node(name, process, log)
        self.nodes.append(node)
        deadline = time.monotonic() + START_TIMEOUT_S
        while STARTED not in log.read_text(errors="replace"):
            if not node.alive() or time.monotonic() > deadline:
                self.kill(node)
                raise RuntimeError(f"ray start of {name} failed:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        node.node_id = node_id_of(process.pid)
        return node

    def kill(self, node: Node, sig: int = signal.SIGKILL) -> None:
        """Kill one node: its `ray start`, raylet, agents and workers (the processes of its session)."""
        for pid in session_processes(node.process.pid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        node.process.wait(timeout=30)

    def stop(self) -> None:
        for node in reversed(self.nodes):  # workers before the head
            self.kill(node)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
