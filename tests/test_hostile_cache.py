"""Hostile user-cache entries (issue 34, findings 1 and 6): a forged, foreign, shared, symlinked or invalid entry is
never used; it is dropped and counted or probed again, never a crash. Expected counts are the closed form."""
import hashlib
import json
import os
import shutil

import pytest

from analysis.count.closed_form import ViTShape, vit_macs
from zoo.models import tag_order
from zoo.runs import count_cache
from zoo.runs import counted as counted_module
from zoo.runs.peaks import PeakCache, peak_key
from zoo.runs.request import Request
from zoo.store.schema import MAX_COUNT
from zoo.runs.tasks import Task, run_task
from zoo.store.user_cache import SECRET_FILE, UserCache

DEIT_TI = ViTShape(embed_dim=192, depth=12, mlp_dim=768, patch_size=16)
DEIT_TI_MACS_224 = vit_macs(DEIT_TI, 224)["total"]       # 1,258,291,200 by the closed form
NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a second user's files need root to make (chown)")


@pytest.fixture
def recounts(monkeypatch):
    made = []
    real = counted_module.measure       # every count made (count and count_of make theirs through it)
    monkeypatch.setattr(counted_module, "measure", lambda request: made.append(request.model) or real(request))
    return made


def _entry_path(model="deit_ti"):
    return UserCache("count").path(count_cache.count_key(Request(model, 224)))


def _plant(path, edit):
    """Rewrite the entry at `path` with edit(entry) applied, its old-style plain sha256 checksum recomputed."""
    entry = json.loads(path.read_text())
    edit(entry)
    canonical = json.dumps([entry["key"], entry["value"]], sort_keys=True, separators=(",", ":")).encode()
    entry["mac"] = entry["checksum"] = hashlib.sha256(canonical).hexdigest()
    path.write_text(json.dumps(entry))


def test_a_planted_count_with_a_recomputed_checksum_is_recounted(recounts):
    task = Task.named("cost", "deit_ti", 224)
    assert run_task(task)["macs"] == DEIT_TI_MACS_224 and recounts == ["deit_ti"]
    _plant(_entry_path(), lambda entry: entry["value"].update(macs=1))
    assert run_task(task)["macs"] == DEIT_TI_MACS_224 and recounts == ["deit_ti"] * 2


def test_a_cached_value_never_sets_the_rows_identity(recounts):
    """A value naming another model (even one carrying a valid MAC) is refused, and the row is the task's."""
    key = count_cache.count_key(Request("deit_ti", 224))
    fresh = counted_module.count("deit_ti", 224, train=False)
    UserCache("count").put(key, {**json.loads(json.dumps(fresh)), "model": "vit_h14", "img_h": 14})
    row = run_task(Task.named("cost", "deit_ti", 224))
    assert (row["model"], row["img_h"], row["macs"]) == ("deit_ti", 224, DEIT_TI_MACS_224) and len(recounts) == 2


@pytest.mark.parametrize("bad", ["a string", {"macs": -5}, {"macs": "1"}, {"macs": 2**64}, [1, 2]])
def test_a_bad_value_is_dropped_and_recounted_not_a_crash(recounts, bad):
    key = count_cache.count_key(Request("deit_ti", 224))
    fresh = json.loads(json.dumps(counted_module.count("deit_ti", 224, train=False)))
    UserCache("count").put(key, {**fresh, **bad} if isinstance(bad, dict) else bad)
    assert run_task(Task.named("cost", "deit_ti", 224))["macs"] == DEIT_TI_MACS_224 and len(recounts) == 2
    assert UserCache("count").get(key) == fresh                      # the bad entry replaced by the recount


def test_a_shared_group_or_world_writable_cache_folder_is_not_read(recounts, isolated_user_cache, caplog):
    task = Task.named("cost", "deit_ti", 224)
    run_task(task)
    for folder in (isolated_user_cache, isolated_user_cache / "count"):
        folder.chmod(0o777)
        assert UserCache("count").get(count_cache.count_key(Request("deit_ti", 224))) is None
        run_task(task)
        folder.chmod(0o700)
    assert len(recounts) == 3
    assert [r.levelname for r in caplog.records if "chmod go-w" in r.getMessage()] == ["WARNING"]   # said once


@needs_root
def test_entries_and_folders_of_another_user_are_not_read(recounts, isolated_user_cache):
    task = Task.named("cost", "deit_ti", 224)
    run_task(task)
    entry = _entry_path()
    for path in (entry, entry.parent, isolated_user_cache / SECRET_FILE):
        os.chown(path, NOBODY, NOBODY)
        assert run_task(task)["macs"] == DEIT_TI_MACS_224
        os.chown(path, 0, 0)
    assert len(recounts) == 4


def test_a_symlinked_namespace_folder_is_neither_read_nor_written_through(recounts, isolated_user_cache, tmp_path):
    task = Task.named("cost", "deit_ti", 224)
    run_task(task)
    shutil.move(isolated_user_cache / "count", tmp_path / "elsewhere")
    (isolated_user_cache / "count").symlink_to(tmp_path / "elsewhere")
    before = sorted(p.name for p in (tmp_path / "elsewhere").iterdir())
    assert run_task(Task.named("cost", "deit_ti", 224))["macs"] == DEIT_TI_MACS_224 and len(recounts) == 2
    assert run_task(Task.named("cost", "deit_ti", 224, batch_size=2))["batch_size"] == 2
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == before      # nothing written through it


def test_the_secret_is_private_and_a_readable_one_is_replaced(recounts, isolated_user_cache):
    task = Task.named("cost", "deit_ti", 224)
    run_task(task)
    secret = isolated_user_cache / SECRET_FILE
    assert secret.stat().st_mode & 0o777 == 0o600
    secret.chmod(0o644)                                  # others could read it, so forge entries: not trusted
    run_task(task)
    assert len(recounts) == 2 and secret.stat().st_mode & 0o777 == 0o600      # a fresh secret replaced it
    run_task(task)
    assert len(recounts) == 2                            # and entries under the fresh one are read back


def _fake_probe(value):
    return lambda device, dtype, threads=None: {"peak_flops": value, "peak_kernel": "mm_fake"}


@pytest.mark.parametrize("planted", [1e15, 9.5e18, "fast", -1.0])
def test_a_planted_peak_is_replaced_by_reprobe_and_an_invalid_one_probed_again(tmp_path, monkeypatch, planted):
    monkeypatch.setattr("zoo.runs.peaks.measure_bandwidth", lambda device, threads=None: {"mem_bandwidth": 1e10})
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", _fake_probe(2e9))
    task = Task.named("throughput", "vit_ti16", 224, device="cpu", threads=1)
    UserCache("peak").put({"peak_key": peak_key(task)}, {"peak_flops": planted, "peak_kernel": "mm_planted"})
    got = PeakCache(tmp_path / "a").get(task)
    valid = isinstance(planted, float) and 0 < planted <= MAX_COUNT
    assert got["peak_flops"] == (planted if valid else 2e9)                # invalid: dropped and probed again
    assert PeakCache(tmp_path / "b", reprobe=True).get(task)["peak_flops"] == 2e9     # --reprobe-peak replaces it
    assert PeakCache(tmp_path / "c").get(task)["peak_flops"] == 2e9


def test_a_planted_peak_in_the_results_folder_beyond_the_row_bound_is_probed_again(tmp_path, monkeypatch):
    monkeypatch.setattr("zoo.runs.peaks.measure_bandwidth", lambda device, threads=None: {"mem_bandwidth": 1e10})
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", _fake_probe(3e9))
    task = Task.named("throughput", "vit_ti16", 224, device="cpu", threads=1)
    tmp_path.joinpath("peaks.json").write_text(json.dumps({peak_key(task): {"peak_flops": 5e19, "peak_kernel": "x"}}))
    assert PeakCache(tmp_path).get(task)["peak_flops"] == 3e9


def test_a_planted_timm_tag_order_is_not_the_default_checkpoint(monkeypatch):
    arch = "vit_tiny_patch16_224"
    monkeypatch.setattr(tag_order, "shipped", lambda: {})
    tag_order.timm_tag_order.cache_clear()
    try:
        honest = tag_order.timm_tag_order(arch)
        path = UserCache(tag_order.NAMESPACE).path({"arch": arch, "timm": tag_order.installed_timm()})
        _plant(path, lambda entry: entry.update(value=["planted_in21k"]))
        tag_order.timm_tag_order.cache_clear()
        assert tag_order.timm_tag_order(arch) == honest and honest[0] != "planted_in21k"
    finally:
        tag_order.timm_tag_order.cache_clear()


def _put_one(n):
    return UserCache("demo").put({"n": n}, n)


def test_processes_starting_on_an_empty_cache_agree_on_one_secret():
    """Pool workers on a cold cache each make the secret at once: every entry they write must verify."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(4) as pool:
        assert all(pool.map(_put_one, range(8)))
    assert [UserCache("demo").get({"n": n}) for n in range(8)] == list(range(8))
