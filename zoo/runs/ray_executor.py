"""The Ray executor: each task is one Ray task, and each row reaches `on_row` as soon as its task ends.

Cost tasks (meta device) ask for one CPU, so a node runs one per core at once. Throughput tasks ask
for a whole device: one GPU, or every CPU of one node, so no two measurements share hardware; each
row's `env` names the node it ran on (Ray node id and IP, hostname, CPU model, GPU name).
Ray is an optional extra (`pip install "archzoo[ray]"`); the local executor needs none of this.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import traceback
from dataclasses import dataclass, field

from ..errors import UsageError, ZooError
from .scheduler import Schedule
from .tasks import OnRow, Task, failed_row, run_task

CONNECT_TIMEOUT_S = 3.0   # check_ray's TCP probe: a wrong address fails in seconds, not after Ray's retries
# NB: counting on the meta device is single-threaded Python, so more than one task per core gains nothing,
# and each task running at once is its own worker process importing torch.
COST_TASK_CPUS = 1
GPU_TASK_CPUS = 1         # the host thread that feeds the GPU
INSTALL_HINT = 'pip install "archzoo[ray]"'


# --- checking the address (runs in `zoo.compare`'s parse, before any work) ---

def check_ray(address: str | None) -> None:
    """Raise UsageError (one line; exit status 2) if Ray is missing or `address` is malformed or dead.

    address: "auto" (RAY_ADDRESS, else the cluster `ray start` last started on this machine), HOST:PORT
    of a cluster's head (its GCS port, 6379 by default), or None (run_ray calls ray.init() itself).
    A TCP probe of the head with a short timeout replaces Ray's own minutes-long connect retries.
    """
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError(f"--executor ray: Ray is not installed ({INSTALL_HINT})") from None
    source = "--ray-address"
    if address in (None, "auto") and os.environ.get("RAY_ADDRESS", "auto") != "auto":
        address, source = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"  # what ray.init() would connect to
    if address is None:
        return
    host, port = parse_host_port(address, source) if address != "auto" else _find_local_head()
    try:
        speaks_grpc = _speaks_http2(host, port)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise UsageError(f"{source} {address}: no Ray cluster answers at {host}:{port} ({reason}); "
                         f"start one with `ray start --head --port={port}` or fix the address") from None
    if not speaks_grpc:  # ray.init would retry such a port forever
        raise UsageError(f"{source} {address}: {host}:{port} answers, but not as a Ray head (its GCS speaks gRPC "
                         f"over HTTP/2); give the head's GCS port (6379 by default)")


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS


def _speaks_http2(host: str, port: int) -> bool:
    """Whether the port answers the HTTP/2 connection preface with a SETTINGS frame, as a gRPC server
    (Ray's GCS) does; a plain HTTP/1 server, or silence until the timeout, is not a Ray head."""
    with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as conn:
        conn.sendall(HTTP2_PREFACE)
        header = b""
        try:
            while len(header) < 9:
                chunk = conn.recv(9 - len(header))
                if not chunk:
                    break
                header += chunk
        except socket.timeout:
            return False
    return len(header) == 9 and header[3] == 0x04   # frame type 4: SETTINGS


def parse_host_port(text: str, source: str = "--ray-address") -> tuple[str, int]:
    """'host:port' or '[v6 address]:port' -> (host, port); anything else is a UsageError."""
    host, colon, port = text.strip().rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host
    malformed = (not colon or not host or not port.isdigit() or not 0 < int(port) < 65536
                 or any(c in host for c in "/[] ") or (":" in host and not bracketed))
    if malformed:
        raise UsageError(f"{source}: expected auto or HOST:PORT of a Ray head node (e.g. 10.0.0.5:6379), "
                         f"got {text!r}")
    return host, int(port)


def _find_local_head() -> tuple[str, int]:
    """Where "auto" points: the cluster `ray start` last started on this machine (RAY_ADDRESS is handled)."""
    try:  # NB: Ray's own lookup for "auto"; not a public API
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:
        raise UsageError("--ray-address auto: this Ray version cannot look up its running cluster; "
                         "give HOST:PORT instead") from None
    try:
        found = canonicalize_bootstrap_address_or_die("auto")
    except (ConnectionError, ValueError) as e:
        reason = " ".join(str(e).split()).split(". Please")[0] or type(e).__name__
        raise UsageError(f"--ray-address auto: {reason} on this machine (start one with `ray start --head`, "
                         f"or give HOST:PORT)") from None
    return parse_host_port(found, "--ray-address auto")


# --- what runs on a worker ---

def node_env(kind: str) -> dict:
    """Where this worker runs: the Ray node and, for throughput rows, its CPU and GPU."""
    import ray

    env = {"ray_node_id": ray.get_runtime_context().get_node_id(),
           "ray_node_ip": ray.util.get_node_ip_address(), "hostname": socket.gethostname()}
    if kind == "throughput":
        import torch
        from analysis.timing.fingerprint import cpu_model_name

        # Ray sets CUDA_VISIBLE_DEVICES to the GPU it granted, so device 0 is ours
        env.update(cpu_model=cpu_model_name(),
                   gpu_name=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    return env


class EscapedError(RuntimeError):
    """An exception that escaped run_task on a worker, as text (first line: type and message; then the
    traceback): not every exception class survives the pickling back to the driver."""


def run_on_node(task: Task, macs: int | None) -> dict:
    """`run_task` on a Ray worker, with the node it ran on added to the row's env. A timed task takes this
    node's GEMM peak and bandwidth from the node's user cache (zoo.runs.peaks, as a local run takes its own):
    probed once per node, not once per row."""
    try:
        row = run_task(task, macs=macs, peak=_node_peak(task))
    except Exception as e:  # run_task records failed measurements itself; this is anything else
        raise EscapedError(f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}") from None
    env = row.setdefault("env", {})
    for name, value in node_env(task.kind).items():  # what the measurement itself recorded wins
        env.setdefault(name, value)
    return row


def _node_peak(task: Task) -> dict | None:
    """This node's peak for a throughput task (None for a count). NB: no peaks.json here (the driver's --out
    may not be on this node), so the user cache alone keeps it; a probe under load is used for this row only."""
    if task.kind != "throughput":
        return None
    from .peaks import PeakCache

    return PeakCache(None).get(task)


# --- the driver ---

def describe_error(error: BaseException) -> str:
    """One line for a failed attempt: the exception that escaped the worker, or why Ray lost the task."""
    cause = getattr(error, "cause", None)  # a RayTaskError wraps what the task raised
    if isinstance(cause, EscapedError):
        return str(cause).splitlines()[0][:300]
    shown = cause if isinstance(cause, BaseException) else error
    lines = [line for line in str(shown).strip().splitlines() if line.strip()]
    return f"{type(shown).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def given_up_row(task: Task, errors: list[str], detail: str = "") -> dict:
    """The row for a task that never produced one: the one failed-row format, with every attempt."""
    from ..models.registry import get_spec

    try:
        family = get_spec(task.request.model).family
    except ZooError:  # e.g. a timm: name this driver cannot resolve; the row must still be written
        family = None
    row = failed_row(task, errors[-1], family, detail or None)
    row["failed_attempts"] = errors
    return row


@dataclass
class CpuNodes:
    """Whole-node slots for CPU timing: at most one of our throughput tasks per alive node."""
    ray: object
    busy: set = field(default_factory=set)
    suspect: set = field(default_factory=set)   # nodes where an attempt was lost: used only as a last resort

    def take(self, count: int, others_in_flight: bool) -> list[tuple[str, float]]:
        """Up to `count` free (node id, CPUs), largest first, marked busy."""
        alive = {n["NodeID"]: n["Resources"].get("CPU", 0.0) for n in self.ray.nodes()
                 if n.get("Alive") and n["Resources"].get("CPU", 0.0) >= 1}
        free = sorted((node for node in alive if node not in self.busy), key=alive.get, reverse=True)
        trusted = [node for node in free if node not in self.suspect]
        picked = (trusted or (free if not others_in_flight else []))[:count]
        self.busy.update(picked)
        return [(node, alive[node]) for node in picked]

    def release(self, node: str, lost: bool) -> None:
        self.busy.discard(node)
        if lost:
            self.suspect.add(node)
        else:
            self.suspect.discard(node)


def run_ray(plan: Schedule, on_row: OnRow, address: str | None = None, max_retries: int = 2) -> None:
    """Run a schedule's tasks on a Ray cluster, handing each row to `on_row` the moment its task finishes.

    address: "auto" or HOST:PORT of a running cluster. None calls ray.init() with no address: the
    cluster in RAY_ADDRESS or the one `ray start` last started on this machine if any, else a new
    local Ray for this sweep. A Ray connection made here is shut down at the end; one the caller
    made (ray.init() before run_ray) is reused and left open.
    Each task is tried at most 1 + max_retries times (a worker or node died, or an error escaped
    run_task); after that its row records every attempt's error. Failed measurements are not
    retried: run_task records them in the row. Cost tasks run first and throughput tasks get their
    MAC counts from the schedule, as in the local executor; they start as devices free up.
    """
    import ray

    connected_here = not ray.is_initialized()
    if connected_here:
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        except (ConnectionError, RuntimeError) as e:  # reachable, yet refused: e.g. a token is needed
            chain = f"{e} {e.__cause__ or ''}"
            hint = ("; the cluster uses token authentication: give this process its token in RAY_AUTH_TOKEN "
                    "or RAY_AUTH_TOKEN_PATH" if "uthenticat" in chain else
                    "; run the sweep on a node of the cluster (its head, or with `ray job submit`)")
            raise UsageError(f"--ray-address {address}: {str(e).strip().splitlines()[0]}{hint}") from e
    try:
        _Sweep(ray, on_row, max_retries, plan).run(plan.tasks)
    finally:
        if connected_here:
            ray.shutdown()


class _Sweep:
    """The ray.wait loop: submit, collect rows as they finish, retry lost attempts, give up in bounds."""

    def __init__(self, ray, on_row: OnRow, max_retries: int, plan: Schedule):
        self.ray, self.on_row, self.max_retries, self.plan = ray, on_row, max_retries, plan
        self.remote = ray.remote(run_on_node)
        self.in_flight: dict = {}                 # ObjectRef -> (task, CPU node id or None)
        self.errors: dict[Task, list[str]] = {}
        self.cpu_nodes = CpuNodes(ray)
        self.has_gpus = ray.cluster_resources().get("GPU", 0) >= 1

    def run(self, tasks: list[Task]) -> None:
        waiting = [t for t in tasks if t.kind != "cost"]   # timed once every cost task is done
        try:
            has_cpus = self.ray.cluster_resources().get("CPU", 0) >= COST_TASK_CPUS
            for task in tasks:
                if task.kind == "cost" and has_cpus:
                    self.submit(task)
                elif task.kind == "cost":  # Ray would queue it forever
                    self.give_up(task, f"NoNode: no Ray node has {COST_TASK_CPUS} CPU for a cost task")
            while self.in_flight or waiting:
                if not any(t.kind == "cost" for t, _ in self.in_flight.values()):
                    waiting = self.start_timing(waiting)
                if not self.in_flight:
                    continue
                ready, _ = self.ray.wait(list(self.in_flight), num_returns=1)
                retry = self.collect(ready[0])
                if retry is not None:
                    if retry.kind == "cost":
                        self.submit(retry)
                    else:
                        waiting.insert(0, retry)
        finally:
            for ref in self.in_flight:  # an interrupted sweep leaves nothing running on the cluster
                with contextlib.suppress(Exception):        # best effort; the row was never promised
                    self.ray.cancel(ref, force=True)

    def uses_gpu(self, task: Task) -> bool:
        return task.timing.device.startswith("cuda") or (task.timing.device == "auto" and self.has_gpus)

    def submit(self, task: Task, node: tuple[str, float] | None = None) -> None:
        macs = self.plan.macs_for(task) if task.kind == "throughput" else None
        if task.kind == "cost":
            options = {"num_cpus": COST_TASK_CPUS}
        elif node is None:
            options = {"num_cpus": GPU_TASK_CPUS, "num_gpus": 1}
        else:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options = {"num_cpus": node[1], "scheduling_strategy": NodeAffinitySchedulingStrategy(node[0], soft=False)}
        # NB: Ray's own retries are off: this loop retries, so a retry can go to another node
        ref = self.remote.options(max_retries=0, retry_exceptions=False, **options).remote(task, macs)
        self.in_flight[ref] = (task, node[0] if node else None)

    def start_timing(self, waiting: list[Task]) -> list[Task]:
        """Submit GPU timings (Ray hands out the GPUs) and one CPU timing per free node; return the rest."""
        gpu = [t for t in waiting if self.uses_gpu(t)]
        cpu = [t for t in waiting if not self.uses_gpu(t)]
        for task in gpu:
            if self.has_gpus:
                self.submit(task)
            else:
                self.give_up(task, "NoGPU: the Ray cluster has no GPU (ray.cluster_resources() lists none)")
        if not cpu:
            return []
        nodes = self.cpu_nodes.take(len(cpu), others_in_flight=bool(self.in_flight))
        for task, node in zip(cpu, nodes):
            self.submit(task, node)
        rest = cpu[len(nodes):]
        if rest and not self.in_flight:  # nothing will free a node: none alive has a CPU
            for task in rest:
                self.give_up(task, "NoNode: no alive Ray node has a CPU to time on")
            return []
        return rest

    def collect(self, ref) -> Task | None:
        """Hand a finished task's row to on_row, or return the task if it should be tried again."""
        task, node = self.in_flight.pop(ref)
        try:
            row = self.ray.get(ref)
        except self.ray.exceptions.RayError as e:
            lost = not isinstance(e, self.ray.exceptions.RayTaskError)  # the worker or node, not the code
            if node:
                self.cpu_nodes.release(node, lost=lost)
            errors = self.errors.setdefault(task, [])
            errors.append(describe_error(e))
            if len(errors) <= self.max_retries:
                return task
            cause = getattr(e, "cause", None)
            detail = str(cause) if isinstance(cause, EscapedError) else "".join(traceback.format_exception_only(e))
            self.give_up(task, detail=detail[-4000:])
            return None
        if node:
            self.cpu_nodes.release(node, lost=False)
        if task in self.errors:
            row["failed_attempts"] = self.errors.pop(task)
        self.plan.record(task, row)
        self.on_row(row)
        return None

    def give_up(self, task: Task, error: str | None = None, detail: str = "") -> None:
        errors = self.errors.pop(task, [])
        if error:
            errors.append(error)
        self.on_row(given_up_row(task, errors, detail))
