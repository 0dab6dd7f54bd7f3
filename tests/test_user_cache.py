"""The user cache: counts and GEMM peaks kept across runs, and never trusted when damaged, foreign,
a symlink, or made by other software or other source code. Expected counts are the closed form."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from analysis.count.closed_form import ViTShape, vit_macs
from zoo.runs import count_cache, parallel
from zoo.runs import counted as counted_module
from zoo.runs.peaks import PEAKS_FILE, PeakCache, peak_key
from zoo.runs.request import Request
from zoo.runs.tasks import Task, run_task
from zoo.store.user_cache import CACHE_DIR_ENV, UserCache, cache_dir, disabled

VIT_TI16 = ViTShape(embed_dim=192, depth=12, mlp_dim=768, patch_size=16)
VIT_TI16_MACS_224 = vit_macs(VIT_TI16, 224)["total"]       # 1,258,291,200 by the closed form


@pytest.fixture
def counts(monkeypatch):
    """Every real count made through the cache, as (model, side) in order."""
    made = []
    real = counted_module.measure       # every count made (count and count_of make theirs through it)

    def counting(request):
        made.append((request.model, request.img_size.side))
        return real(request)

    monkeypatch.setattr(counted_module, "measure", counting)
    return made


def test_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "here"))
    assert cache_dir() == tmp_path / "here"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_dir() == tmp_path / "xdg" / "archzoo"


def test_entries_round_trip_and_untrusted_ones_are_ignored(isolated_user_cache):
    cache = UserCache("demo")
    key, other = {"model": "a", "n": 1}, {"model": "b", "n": 1}
    assert cache.get(key) is None
    assert cache.put(key, {"macs": 5}, {"who": "test"})
    assert cache.get(key) == {"macs": 5} and cache.entry(key)["provenance"] == {"who": "test"}
    path = cache.path(key)
    shutil.copy(path, cache.path(other))                 # foreign: another key's entry under this key's name
    assert cache.get(other) is None
    text = path.read_text()
    path.write_text(text.replace('"macs": 5', '"macs": 6'))   # damaged: the value no longer matches its checksum
    assert cache.get(key) is None
    path.write_text(text[: len(text) // 2])                   # torn
    assert cache.get(key) is None
    path.write_bytes(b"\xff\xfe")                              # not UTF-8 JSON
    assert cache.get(key) is None
    path.unlink()
    path.mkdir()                                               # not a file
    assert cache.get(key) is None


def test_a_symlinked_entry_is_neither_followed_nor_written_through(isolated_user_cache, tmp_path):
    cache = UserCache("demo")
    key = {"k": 1}
    outside = tmp_path / "outside.json"
    cache.put(key, 7)
    shutil.move(cache.path(key), outside)          # a valid entry of this very key, reached through a link
    cache.path(key).symlink_to(outside)
    assert cache.get(key) is None                  # refused (O_NOFOLLOW), whatever it points to
    assert cache.put(key, 8)
    assert not cache.path(key).is_symlink() and cache.get(key) == 8
    assert json.loads(outside.read_text())["value"] == 7     # the link's target is untouched


def test_off_or_unwritable_means_no_reads_no_writes_and_no_errors(isolated_user_cache, tmp_path, monkeypatch):
    cache = UserCache("demo")
    cache.put({"k": 1}, 1)
    with disabled():
        assert cache.get({"k": 1}) is None and cache.put({"k": 2}, 2) is False
    assert not cache.path({"k": 2}).exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert UserCache("demo", root=blocker).put({"k": 1}, 1) is False      # a file where the folder should be
    assert cache.put({"k": 3}, float("nan")) is False                         # not JSON: not stored, no error


def test_a_count_is_read_back_and_a_damaged_entry_is_recounted_not_trusted(counts):
    first = counted_module.counted("vit_ti16", 224, train=False)
    assert first["macs"] == VIT_TI16_MACS_224 and counts == [("vit_ti16", 224)]
    assert counted_module.counted("vit_ti16", 224, train=False) == first and len(counts) == 1     # from the cache
    path = UserCache("count").path(count_cache.count_key(Request("vit_ti16", 224)))
    path.write_text(path.read_text().replace(f'"macs": {VIT_TI16_MACS_224}', '"macs": 1'))
    again = counted_module.counted("vit_ti16", 224, train=False)
    assert again["macs"] == VIT_TI16_MACS_224 and len(counts) == 2                              # counted afresh
    assert counted_module.counted("vit_ti16", 224, train=False)["macs"] == VIT_TI16_MACS_224 and len(counts) == 2


def test_another_version_or_source_misses_the_cache(counts, monkeypatch):
    counted_module.counted("vit_ti16", 224, train=False)
    with monkeypatch.context() as patch:
        patch.setattr("analysis.timing.fingerprint.timm_version", lambda: "0.0.1")
        counted_module.counted("vit_ti16", 224, train=False)
    assert len(counts) == 2                                      # another timm: counted again
    with monkeypatch.context() as patch:
        patch.setattr("torch.__version__", "0.0.1")
        counted_module.counted("vit_ti16", 224, train=False)
    assert len(counts) == 3                                      # another torch: counted again
    with monkeypatch.context() as patch:
        patch.setattr(count_cache, "source_hash", lambda: "edited source")
        counted_module.counted("vit_ti16", 224, train=False)
    assert len(counts) == 4                                      # another source: counted again
    counted_module.counted("vit_ti16", 224, train=False)
    assert len(counts) == 4                                      # and the original key is still a hit


def test_the_source_hash_changes_with_any_source_file(tmp_path, monkeypatch):
    for package in count_cache.SOURCE_PACKAGES:
        shutil.copytree(count_cache.ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(count_cache, "ROOT", tmp_path)
    count_cache.source_hash.cache_clear()
    try:
        before = count_cache.source_hash()
        with open(tmp_path / "analysis" / "count" / "op_rules.py", "a") as f:
            f.write("# an edit\n")
        count_cache.source_hash.cache_clear()
        assert count_cache.source_hash() != before
    finally:
        count_cache.source_hash.cache_clear()


def test_cost_rows_through_the_cache_equal_fresh_ones(counts):
    task = Task.named("cost", "vit_ti16", 224, train=True)
    with disabled():
        fresh = run_task(task)
    cold, warm = run_task(task), run_task(task)
    assert fresh == cold == warm and len(counts) == 2              # disabled + cold; warm read the cache
    assert warm["macs"] == VIT_TI16_MACS_224


def test_counting_on_a_pool_keeps_the_order_and_the_numbers(monkeypatch):
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    assert list(parallel.map_ordered(abs, [-3, 1, -2, 5])) == [3, 1, 2, 5]
    tasks = [Task.named("cost", m, 224, train=False) for m in ("deit_ti", "vit_ti16", "resnet50")]
    with disabled():
        serial = [run_task(t) for t in tasks]
        pooled = list(parallel.count_rows(tasks))
    assert [r["model"] for r in pooled] == ["deit_ti", "vit_ti16", "resnet50"] and pooled == serial


def test_pool_workers_take_the_callers_settings_now_not_the_forkservers(tmp_path, monkeypatch):
    """With a thread alive (a notebook, a progress bar) the workers come from a forkserver, which keeps the
    environment it started with: a second call after $ARCHZOO_CACHE_DIR moved must still count into the new folder,
    and an ARCHZOO_* variable the caller has unset since is unset in the worker too."""
    import threading

    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    release = threading.Event()
    alive = threading.Thread(target=release.wait, daemon=True)
    alive.start()
    try:
        assert parallel._context().get_start_method() == "forkserver"
        monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "first"))
        monkeypatch.setenv("ARCHZOO_VERBOSE", "1")
        names = [CACHE_DIR_ENV, "ARCHZOO_VERBOSE"]
        assert list(parallel.map_ordered(os.getenv, names)) == [str(tmp_path / "first"), "1"]
        monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "second"))
        monkeypatch.delenv("ARCHZOO_VERBOSE")
        assert list(parallel.map_ordered(os.getenv, names)) == [str(tmp_path / "second"), None]
    finally:
        release.set()
        alive.join()


def test_the_gemm_peak_is_shared_by_every_folder_and_copied_into_each(tmp_path, monkeypatch, kept_bandwidth):
    calls = []

    def fake_probe(device, dtype, threads=None):
        calls.append(dtype)
        return {"peak_flops": 2e9, "peak_kernel": "mm_fake", "probe_flops": {"mm_fake": 2e9}}

    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops", fake_probe)
    task = Task.named("throughput", "vit_ti16", 224, device="cpu", threads=1)
    first = PeakCache(tmp_path / "a" / "results").get(task)
    second = PeakCache(tmp_path / "b" / "results").get(task)     # a new folder: the user cache's peak
    assert first["peak_flops"] == second["peak_flops"] == 2e9 and calls == ["fp32"]
    copied = json.loads((tmp_path / "b" / "results" / PEAKS_FILE).read_text())
    kept = copied[peak_key(task)]
    assert kept["peak_flops"] == 2e9 and kept["peak_provenance"]["cache_file"]
    with disabled():
        PeakCache(tmp_path / "c" / "results").get(task)             # no user cache: probed for this folder
    assert calls == ["fp32", "fp32"]
    entry = UserCache("peak").path({"peak_key": kept["peak_provenance"]["peak_key"]})
    entry.write_text("{damaged")
    PeakCache(tmp_path / "d" / "results").get(task)
    assert len(calls) == 3                                          # a damaged entry is probed again


def test_the_memory_bandwidth_is_shared_by_every_folder_and_a_probe_under_load_is_not_kept(tmp_path, monkeypatch):
    probes = [{"mem_bandwidth": 9e9, "bandwidth_foreign_cpu_share": 1.0},     # others held every core: not kept
              {"mem_bandwidth": 5e9, "bandwidth_foreign_cpu_share": 0.0},
              {"mem_bandwidth": 4e9, "bandwidth_foreign_cpu_share": 0.0}]
    calls = []
    monkeypatch.setattr("zoo.runs.peaks.measure_peak_flops",
                        lambda device, dtype, threads=None: {"peak_flops": 1e9, "peak_kernel": "mm_fake"})
    monkeypatch.setattr("zoo.runs.peaks.measure_bandwidth",
                        lambda device, threads=None: calls.append(device) or probes[len(calls) - 1])
    task = Task.named("throughput", "vit_ti16", 224, device="cpu", threads=1)
    assert PeakCache(tmp_path / "a" / "results").get(task)["mem_bandwidth"] == 9e9     # used for its own run
    assert not any(k.startswith("bandwidth | ")
                   for k in json.loads((tmp_path / "a" / "results" / PEAKS_FILE).read_text()))
    assert PeakCache(tmp_path / "b" / "results").get(task)["mem_bandwidth"] == 5e9 and len(calls) == 2
    assert PeakCache(tmp_path / "c" / "results").get(task)["mem_bandwidth"] == 5e9 and len(calls) == 2  # cached
    copied = json.loads((tmp_path / "c" / "results" / PEAKS_FILE).read_text())
    kept = next(v for k, v in copied.items() if k.startswith("bandwidth | "))
    assert kept["mem_bandwidth"] == 5e9 and kept["bandwidth_provenance"]["cache_file"]
    with disabled():
        PeakCache(tmp_path / "d" / "results").get(task)
    assert len(calls) == 3                                          # no user cache: probed for this folder


def test_import_zoo_loads_neither_torch_timm_pandas_nor_matplotlib():
    """A fresh interpreter is what is tested here, hence the subprocess."""
    code = ("import sys, zoo; zoo.__version__; "
            "print(sorted(m for m in ('torch', 'timm', 'pandas', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ}).stdout
    assert out.strip() == "[]"


def test_a_model_registered_by_user_code_is_keyed_by_its_spec(counts, monkeypatch):
    """Code outside archzoo's source hash (a user's own register()) cannot serve a stale count."""
    import dataclasses

    from zoo.models import registry

    base = registry.get_spec("vit_ti16")
    for depth in (1, 2):
        spec = dataclasses.replace(base, name="user_vit", vit_config=dataclasses.replace(base.vit_config, depth=depth))
        monkeypatch.setitem(registry._REGISTRY, "user_vit", spec)
        macs = counted_module.counted("user_vit", 224, train=False)["macs"]
        assert macs == vit_macs(dataclasses.replace(VIT_TI16, depth=depth), 224)["total"]
    assert len(counts) == 2


def test_the_count_key_tells_frozen_stages_and_detectors_apart():
    """A detector's or a partly frozen backbone's count is never read back for the plain backbone's."""
    plain = Request("vit_ti16", 224, train=True)
    assert count_cache.count_key(plain.replace(frozen_stages=2)) != count_cache.count_key(plain)
    assert count_cache.count_key(plain.replace(detector="maskrcnn")) != count_cache.count_key(plain)
    assert count_cache.count_key(plain.replace(segmenter="upernet")) != count_cache.count_key(plain)
