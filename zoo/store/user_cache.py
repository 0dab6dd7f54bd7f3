"""The user's archzoo cache: keyed JSON entries with their provenance, in the XDG cache folder, trusted only
when this user wrote them.

Where: $ARCHZOO_CACHE_DIR, else platformdirs' user cache folder (~/.cache/archzoo, or $XDG_CACHE_HOME/archzoo).
$ARCHZOO_NO_CACHE=1 (`--no-cache`) turns it off: nothing is read or written. One file per entry,
<namespace>/<sha256 of the key>.json, holding the key, the value, where it came from, and an HMAC-SHA256 of
namespace, key and value under a per-user secret (<cache>/secret.key, 32 random bytes, mode 0600).
Trust: the cache folder, the namespace folder, the secret and the entry must be owned by this user and not
writable by group or others (the secret not readable by them either); every one of them is opened relative to
its folder with O_NOFOLLOW, so a symlink from the cache folder down is never followed. An entry that fails any
of this, is damaged, of another format, stored under another key or namespace, or whose value the caller's
check refuses (`valid`) is ignored, so the caller measures again and writes a fresh one. Writes go to a
temporary file renamed over the entry (readers see the old entry or the new one, never half), and a cache
folder that cannot be written or trusted only costs the speed-up.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Callable, Optional

from .run_logs import environment
from .safe_io import strict_loads

CACHE_DIR_ENV = "ARCHZOO_CACHE_DIR"
NO_CACHE_ENV = "ARCHZOO_NO_CACHE"
FORMAT = 2                      # 2: HMAC under the user's secret (1: a plain sha256 anyone could recompute)
SECRET_FILE = "secret.key"
SECRET_BYTES = 32
MAX_ENTRY_BYTES = 16 << 20      # far above any entry; a bigger file is not ours
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
log = logging.getLogger("zoo.cache")
Check = Optional[Callable[[object], bool]]


class Untrusted(OSError):
    """A cache folder, secret or entry this user did not write (or others could have changed)."""


def cache_dir() -> Path:
    """The folder (not created here): $ARCHZOO_CACHE_DIR, else the platform's user cache folder."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("archzoo", appauthor=False))


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "").strip().lower() in ("", "0", "false", "no")


@contextlib.contextmanager
def disabled(off: bool = True):
    """Within the block (and in processes started from it) the cache is neither read nor written."""
    with environment({NO_CACHE_ENV: "1"} if off else {}):
        yield


@contextlib.contextmanager
def library_cache_home(name: str):
    """Within the block $XDG_CACHE_HOME is <cache>/<name>, or a temporary folder removed after it when the cache
    is off: where a library that writes under ~/.cache on import (ONNX Runtime's device id) writes instead."""
    import tempfile

    with contextlib.ExitStack() as stack:
        folder = cache_dir() / name if enabled() else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with contextlib.suppress(OSError):
            folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)     # the cache folder itself: 0700
            folder.mkdir(exist_ok=True, mode=0o700)
        with environment({"XDG_CACHE_HOME": str(folder)}):
            yield folder


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _mac(secret: bytes, namespace: str, key, value) -> str:
    return hmac.new(secret, _canonical({"namespace": namespace, "key": key, "value": value}), hashlib.sha256).hexdigest()


def _check_mine(info: os.stat_result, what: str, private: bool = False) -> None:
    """Untrusted unless owned by this user and writable (private: readable) by nobody else."""
    if info.st_uid != os.geteuid():
        raise Untrusted(f"{what} is owned by uid {info.st_uid}, not this user ({os.geteuid()})")
    if info.st_mode & (0o077 if private else 0o022):
        raise Untrusted(f"{what} has mode {stat.filemode(info.st_mode)}: "
                        f"{'readable' if private else 'writable'} by group or others")


def _open_folder(name: str | Path, dir_fd: int | None = None, create: bool = False) -> int:
    """A descriptor on a folder of this user's (made 0700 when `create`), never through a symlink."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=dir_fd)
    fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode):
            raise Untrusted(f"{name} is not a folder")
        _check_mine(info, str(name))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_mine(name: str, dir_fd: int, limit: int, private: bool = False) -> bytes:
    """The bytes of a regular file of this user's in `dir_fd`; a symlink is refused (O_NOFOLLOW), not followed."""
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise Untrusted(f"{name} is not a regular file of a plausible size")
        _check_mine(info, name, private)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def _write_new(name: str, dir_fd: int, data: bytes) -> str:
    """`data` in a fresh 0600 file beside `name` (its temporary name returned), removed again on failure."""
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
    except BaseException:
        os.unlink(temporary, dir_fd=dir_fd)
        raise
    finally:
        os.close(fd)
    return temporary


def _secret(root_fd: int, create: bool) -> bytes | None:
    """This user's secret in the cache folder: made when missing (or untrusted) and `create`, else None. Made
    with link(), which fails when another process made one first (then that one is read): pool workers
    starting on an empty cache agree on one secret."""
    for _ in range(3):
        try:
            raw = _read_mine(SECRET_FILE, root_fd, 4 * SECRET_BYTES, private=True)
            if len(raw) == 2 * SECRET_BYTES:
                return bytes.fromhex(raw.decode("ascii"))
            raise Untrusted(f"{SECRET_FILE} is damaged")
        except FileNotFoundError:
            if not create:
                return None
            fresh = secrets.token_bytes(SECRET_BYTES)
            temporary = _write_new(SECRET_FILE, root_fd, fresh.hex().encode("ascii"))
            try:
                os.link(temporary, SECRET_FILE, src_dir_fd=root_fd, dst_dir_fd=root_fd, follow_symlinks=False)
            except FileExistsError:
                continue
            finally:
                os.unlink(temporary, dir_fd=root_fd)
            return fresh
        except (Untrusted, OSError, ValueError) as e:
            if not create:
                log.debug("cache: secret not trusted (%s)", e)
                return None
            fresh = secrets.token_bytes(SECRET_BYTES)
            temporary = _write_new(SECRET_FILE, root_fd, fresh.hex().encode("ascii"))
            try:    # replaces an untrusted secret: every entry made under it is counted again
                os.rename(temporary, SECRET_FILE, src_dir_fd=root_fd, dst_dir_fd=root_fd)
            except OSError:
                os.unlink(temporary, dir_fd=root_fd)
                raise
            return fresh
    return None


_SAID: set = set()


def _say_once(root: Path, error: OSError) -> None:
    """A cache folder of this user's that others can write is a setting to fix: said once, on stderr."""
    if isinstance(error, Untrusted) and "writable by group or others" in str(error) and root not in _SAID:
        _SAID.add(root)
        log.warning("archzoo: the user cache %s is not used: %s (chmod go-w %s)", root, error, root)
    else:
        log.debug("cache: folder %s not used (%s)", root, error)


class UserCache:
    """Entries of one kind (`namespace`: "peak", "count", ...); keys and values are JSON-able."""

    def __init__(self, namespace: str, root: Path | None = None):
        if not namespace.isidentifier():
            raise ValueError(f"cache namespace {namespace!r}: letters, digits and underscores only")
        self.namespace = namespace
        self.root = root if root is not None else cache_dir()
        self.dir = self.root / namespace

    def path(self, key: dict) -> Path:
        return self.dir / self.name(key)

    @staticmethod
    def name(key: dict) -> str:
        return f"{hashlib.sha256(_canonical(key)).hexdigest()}.json"

    def get(self, key: dict, valid: Check = None):
        """The stored value of `key`, or None (off, missing, damaged, foreign, untrusted, or refused by `valid`)."""
        entry = self.entry(key, valid)
        return None if entry is None else entry["value"]

    def entry(self, key: dict, valid: Check = None) -> dict | None:
        """{"key", "value", "provenance", ...} as stored, or None when it cannot be trusted."""
        if not enabled():
            return None
        try:
            root_fd = _open_folder(self.root)
        except OSError as e:     # missing, a symlink (ELOOP), another user's, group-writable: not read
            _say_once(self.root, e)
            return None
        try:
            secret = _secret(root_fd, create=False)
            if secret is None:
                return None
            folder_fd = _open_folder(self.namespace, root_fd)
            try:
                raw = _read_mine(self.name(key), folder_fd, MAX_ENTRY_BYTES)
            finally:
                os.close(folder_fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            log.debug("cache: ignored %s (%s)", self.path(key), e)
            return None
        finally:
            os.close(root_fd)
        return self._trusted(raw, key, secret, valid)

    def _trusted(self, raw: bytes, key: dict, secret: bytes, valid: Check) -> dict | None:
        try:
            entry = strict_loads(raw.decode("utf-8"))
            trusted = (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
                       and entry.get("namespace") == self.namespace and "value" in entry
                       and isinstance(entry.get("mac"), str)
                       and hmac.compare_digest(entry["mac"], _mac(secret, self.namespace, key, entry["value"])))
            trusted = trusted and (valid is None or bool(valid(entry["value"])))
        except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError, OverflowError):
            trusted = False
        if not trusted:
            log.debug("cache: ignored a damaged, foreign or invalid entry %s", self.path(key))
            return None
        return entry

    def put(self, key: dict, value, provenance: dict | None = None) -> bool:
        """Store `value` under `key` atomically; False (and nothing raised) when the folder cannot take it."""
        if not enabled():
            return False
        try:
            _canonical([key, value])
        except (TypeError, ValueError) as e:   # not JSON (NaN, an object): not cached, not an error
            log.debug("cache: not stored (%s)", e)
            return False
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            root_fd = _open_folder(self.root, create=True)
        except OSError as e:
            log.debug("cache: could not use %s (%s)", self.root, e)
            return False
        try:
            secret = _secret(root_fd, create=True)
            entry = {"format": FORMAT, "namespace": self.namespace, "key": key, "value": value,
                     "provenance": provenance or {}, "mac": _mac(secret, self.namespace, key, value)}
            data = json.dumps(entry, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")
            folder_fd = _open_folder(self.namespace, root_fd, create=True)
            try:
                temporary = _write_new(self.name(key), folder_fd, data)
                try:    # renamed over a symlink or stale file at the entry's name; never follows it
                    os.rename(temporary, self.name(key), src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
                except OSError:
                    os.unlink(temporary, dir_fd=folder_fd)
                    raise
            finally:
                os.close(folder_fd)
            return True
        except (OSError, TypeError, ValueError) as e:
            log.debug("cache: could not write in %s (%s)", self.dir, e)
            return False
        finally:
            os.close(root_fd)
