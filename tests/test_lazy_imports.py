"""A command imports only what it uses: the report reads results (no torch, torchvision or timm), and timm's
checkpoint order is read from the user cache once known, keyed by the installed timm's version. Expected tag
orders are timm's own registry (timm.models._registry), not our code's output."""
import os
import subprocess
import sys
from pathlib import Path

from timm.models import _registry

import pytest

from zoo.models import accuracy, tag_order
from zoo.models.cards import TIMM_ARCHS
from zoo.models.registry import list_models
from zoo.store.user_cache import UserCache

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "torchvision", "timm")


def _tags_by_timm(arch: str) -> tuple[str, ...]:
    return tuple(name.partition(".")[2] for name in _registry._model_with_tags[arch])


def test_timm_tag_orders_are_kept_per_timm_version_and_an_untrusted_entry_is_asked_again(monkeypatch):
    arch = TIMM_ARCHS["swin_t"][0]
    asked = []
    real = tag_order.asked_of_timm
    monkeypatch.setattr(tag_order, "asked_of_timm", lambda a: asked.append(a) or real(a))
    monkeypatch.setattr(tag_order, "shipped", lambda: {})                                  # no shipped table
    tag_order.timm_tag_order.cache_clear()
    assert accuracy.timm_tag_order(arch) == _tags_by_timm(arch) and asked == [arch]      # cold: timm's own order
    tag_order.timm_tag_order.cache_clear()
    assert accuracy.timm_tag_order(arch) == _tags_by_timm(arch) and asked == [arch]      # warm: from the cache
    cache, key = UserCache(tag_order.NAMESPACE), {"arch": arch, "timm": tag_order.installed_timm()}
    cache.put(key, {"not": "a tag list"})                                                  # a foreign value
    tag_order.timm_tag_order.cache_clear()
    assert accuracy.timm_tag_order(arch) == _tags_by_timm(arch) and asked == [arch, arch]
    monkeypatch.setattr(tag_order, "installed_timm", lambda: "0.0.1")                      # another timm
    tag_order.timm_tag_order.cache_clear()
    assert accuracy.timm_tag_order(arch) == _tags_by_timm(arch) and len(asked) == 3
    tag_order.timm_tag_order.cache_clear()


SHIPPED_MATCHES = tag_order.shipped().get("timm") == tag_order.installed_timm()
NOT_SHIPPED_FOR = f"the shipped tag orders are for timm {tag_order.shipped().get('timm')}, not the installed " \
                  f"{tag_order.installed_timm()}: rewrite them with `python benchmarks/make_tag_order.py`"


@pytest.mark.skipif(not SHIPPED_MATCHES, reason=NOT_SHIPPED_FOR)
def test_the_shipped_tag_orders_are_the_installed_timms_and_used_without_asking_it(monkeypatch):
    archs = sorted({a for archs in TIMM_ARCHS.values() for a in archs})
    assert sorted(tag_order.shipped()["orders"]) == archs
    for arch in archs:
        assert tuple(tag_order.shipped()["orders"][arch]) == _tags_by_timm(arch), arch
    monkeypatch.setattr(tag_order, "asked_of_timm", lambda a: pytest.fail(f"asked timm for {a}"))
    tag_order.timm_tag_order.cache_clear()
    assert [accuracy.timm_tag_order(a) for a in archs] == [_tags_by_timm(a) for a in archs]
    monkeypatch.setattr(tag_order, "installed_timm", lambda: "0.0.1")                      # another timm: not used
    tag_order.timm_tag_order.cache_clear()
    with pytest.raises(pytest.fail.Exception):
        accuracy.timm_tag_order(archs[0])
    tag_order.timm_tag_order.cache_clear()


def test_the_report_imports_neither_torch_torchvision_nor_timm(tmp_path, committed):
    """The process boundary is what is tested (which modules a fresh `python -m zoo.report` loads), hence the
    subprocess. The user cache is empty: timm's checkpoint orders come from the shipped table (when it is for the
    installed timm; else they are put in the user cache first, as a first report would). The committed PNGs were
    drawn from the committed rows (zoo.report.redraw's digests), so a report into another --out draws no figure:
    it copies them, and loads no matplotlib either."""
    if not SHIPPED_MATCHES:
        tag_order.timm_tag_order.cache_clear()
        for model in list_models():
            accuracy.weight_order(model)
    code = ("import runpy, sys\n"
            "sys.argv = ['zoo.report', '--results', sys.argv[1], '--out', sys.argv[2]]\n"
            "try:\n    runpy.run_module('zoo.report', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            f"print('loaded:', sorted(m for m in {(*HEAVY, 'matplotlib')!r} if m in sys.modules), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", code, str(committed), str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ}, check=True)
    assert run.stderr.strip().splitlines()[-1] == "loaded: []", run.stderr[-2000:]
    built = sorted(tmp_path.glob("*.md")) + sorted(tmp_path.glob("*.png")) + [tmp_path / "plots.json"]
    assert len(built) > 20 and all(p.read_bytes() == (committed / "reports" / p.name).read_bytes() for p in built)


def test_a_count_the_user_cache_holds_is_read_without_importing_torch():
    """A warm count (zoo.select's and zoo.compare --metrics cost's path, with the scheduler and its peak cache
    loaded) needs no torch. The fresh process's modules are what is tested, hence the subprocess; the expected MACs
    are the closed form (ViT paper Eq. 1-4); the count key's torch version read without torch is torch.__version__."""
    import torch

    from analysis.count.closed_form import ViTShape, vit_macs
    from zoo.runs.tasks import Task, run_task

    assert run_task(Task.named("cost", "vit_ti16", 224, train=False))["macs"]        # counted here, into the user cache
    code = ("import sys\nimport zoo.runs.scheduler, zoo.runs.peaks  # noqa\nfrom zoo.runs.tasks import Task, run_task\n"
            "from analysis.timing.fingerprint import torch_version\n"
            "row = run_task(Task.named('cost', 'vit_ti16', 224, train=False))\n"
            f"print(row['macs'], torch_version(), sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ},
                         check=True).stdout.strip().split(maxsplit=2)
    expected = vit_macs(ViTShape(embed_dim=192, depth=12, mlp_dim=768, patch_size=16), 224)["total"]
    assert out == [str(expected), str(torch.__version__), "[]"]


def test_a_lazy_name_is_the_defining_modules_object_on_every_access(monkeypatch):
    """PEP 562: `zoo.get_spec` is resolved on first access and then kept in the module, so the second access (which
    no longer goes through __getattr__) must give the same object; dir(zoo) lists every public name."""
    import zoo
    import zoo.models
    import zoo.store.store
    for name in ("get_spec", "store"):
        monkeypatch.delitem(vars(zoo), name, raising=False)
    assert zoo.get_spec is zoo.models.get_spec          # first access: through __getattr__
    assert zoo.get_spec is zoo.models.get_spec          # second access: the module's own global
    assert zoo.store is sys.modules["zoo.store"]        # the store package, not a name in one
    assert zoo.store.load_frame is zoo.store.store.load_frame
    assert set(zoo.__all__) <= set(dir(zoo))


def test_an_unknown_timm_model_is_refused_without_importing_timm_or_torch(tmp_path):
    """`--models timm:not_a_model_xyz` took 24 s at load 12 to be refused (issue 42, item 5): the whole of timm
    and torch imported to list 1,371 names. The fresh process's modules are what is tested (hence the
    subprocess); the expected closest names come from timm's own list_models, in this process."""
    import difflib

    import timm

    from zoo.models.registry import get_spec

    code = ("import sys\nfrom zoo.select.cli import main\n"
            "code = main(['--models', 'timm:not_a_model_xyz', '--max-gmacs', '5', '--no-save'])\n"
            f"print('loaded:', sorted(m for m in {HEAVY!r} if m in sys.modules), code, file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    close = difflib.get_close_matches("timm:not_a_model_xyz", ["timm:" + n for n in timm.list_models()], n=3,
                                      cutoff=0.5)
    assert run.stderr.splitlines() == [f"zoo.select: error: unknown model 'timm:not_a_model_xyz'; closest: "
                                       f"{', '.join(close)}", "loaded: [] 2"], run.stderr
    # a name timm knows only as a deprecated alias, and a tagged one, still go to timm (which knows them)
    assert get_spec("timm:vit_base_patch16_224_in21k").timm_name == "vit_base_patch16_224_in21k"
    assert get_spec("timm:resnet18.a1_in1k").timm_name == "resnet18.a1_in1k"
    assert list_models() and tmp_path.exists() and list(tmp_path.iterdir()) == []
