"""`zoo.select` on measured latency, with a seeded fake timer (nothing is really timed): screens before timing,
the best-ranked first, the lower bound, the early stop, evidence on every decision, the same decided set twice,
the budget's partial answer, and the plan that carries a question to the serving machine."""
import json
import math
import random
import re

import pytest

from analysis.timing.latency import latency_stats
from zoo.errors import UsageError
from zoo.select.cli import main, select
from zoo.select.bound import CONV_MARGIN, GEMM_MARGIN, lower_bound_ms
from zoo.select.evidence import order_band
from zoo.select.timing import BudgetSpent, Timing
from zoo.console.signals import Terminated

# timm's results-imagenet.csv top-1 at 224 (the tags the rows show): vit_b16 85.108 > convnext_t 84.192 >
# deit_s 79.856 > deit_ti 72.19; none is published for vit_h14 at 224
FOUR = ["deit_ti", "deit_s", "convnext_t", "vit_b16"]


class FakeTimer:
    """Steps drawn around a true latency per model (ms), seeded by (seed, model): one seed gives the same
    steps every run. `clock` advances by the steps' sum plus `overhead_s` a model (export, warm-up)."""

    def __init__(self, true_ms: dict, seed: int = 0, spread: float = 0.03, steps: int = 14,
                 overhead_s: float = 5.0, peak: dict | None = None, interrupt_at: str | None = None,
                 others: float = 0.0):
        self.true_ms, self.seed, self.spread, self.steps = true_ms, seed, spread, steps
        self.overhead_s, self.now, self.timed = overhead_s, 0.0, []
        self.peak_row, self.interrupt_at, self.others = peak or {}, interrupt_at, others

    def run(self, task, macs, peak):
        if task.request.model == self.interrupt_at:
            raise self.interrupt
        self.timed.append(task.request.model)
        rng = random.Random(f"{self.seed}-{task.request.model}")
        steps_ms = [self.true_ms[task.request.model] * math.exp(rng.gauss(0, self.spread)) for _ in range(self.steps)]
        self.now += sum(steps_ms) / 1e3 + self.overhead_s
        stats = latency_stats([s / 1e3 for s in steps_ms])
        from zoo.models.registry import get_spec
        from zoo.store.schema import validate
        from zoo.runs.tasks import base_row, machine

        return validate({**base_row(task), "family": get_spec(task.request.model).family, "mode": "inference",
                         "latency_ms_p50": stats["latency_ms_p50"], "latency_ms_p99": stats["latency_ms_p99"],
                         "imgs_per_s": 1e3 / stats["latency_ms_mean"], "ran_batch_size": 1, "cv": stats["cv"],
                         "foreign_cpu_share": self.others, "noisy": self.others > 0.15, "iters": self.steps,
                         "latencies_ms": steps_ms,
                         "env": machine(task.timing.device)})

    def timing(self) -> Timing:
        return Timing(run=self.run, peak=lambda task: self.peak_row, clock=lambda: self.now, caches=lambda: None)


def ask(models, timer, **options):
    options = {"device": "cpu", "save": False, "latency_stat": "p99", **options}
    return select(models, 224, timing=timer.timing(), **options)


def decided(out) -> tuple:
    return (tuple(sorted(r["model"] for r in out["shortlist"])),
            tuple(sorted(e["model"] for e in out["excluded"] if "evidence" in e)),
            tuple(sorted(u["model"] for u in out["undecided"])))


def test_order_band_is_the_binomial_order_statistic():
    # n=10, median: P(Bin(10, .5) >= 2) = 0.989 >= .975 > P(>= 3) = 0.945, so the lower edge is the 2nd smallest,
    # and symmetrically the upper edge the 9th (P(Bin <= 8) = 0.989)
    assert order_band(list(range(1, 11)), 0.5) == (2, 9, True)
    # n=14, p99: P(Bin(14, .99) >= 13) = 0.991 (the 13th), P(>= 14) = 0.99**14 = 0.869; an upper bound, the n-th,
    # needs P(Bin(n, .99) <= n - 1) = 1 - 0.99**n >= 0.975: n >= 368
    assert order_band(list(range(1, 15)), 0.99) == (13, 14, False)
    assert order_band(list(range(1, 368)), 0.99)[2] is False
    assert order_band(list(range(1, 369)), 0.99)[1:] == (368, True)


def test_the_most_accurate_is_timed_first_and_the_rest_are_left_untimed(caplog):
    timer = FakeTimer({"vit_b16": 95.0, "convnext_t": 20.0, "deit_s": 18.0, "deit_ti": 8.0})
    with caplog.at_level("INFO", logger="zoo.select"):
        out = ask(FOUR, timer, max_latency_ms=30)
    said = caplog.text
    assert "measured latency answers for this machine only" in said
    assert "4 candidates to time, best-ranked first (0 screened out before timing, no lower bound: no trustworthy peak" in said
    assert "budget 300 s (--budget-s)" in said and "[2/4] timing convnext_t" in said and "ETA <=" in said
    # vit_b16 (85.108) over the budget, then convnext_t (84.192) fits: deit_s and deit_ti cannot beat it
    assert timer.timed == ["vit_b16", "convnext_t"]
    assert [r["model"] for r in out["shortlist"]] == ["convnext_t"]
    assert [u["model"] for u in out["untimed"]] == ["deit_s", "deit_ti"]
    assert all("cannot beat it" in u["reason"] for u in out["untimed"])
    (vit,) = out["excluded"]
    assert vit["reason"].startswith("latency p99 ") and "> 30 ms" in vit["reason"] and "n=14" in vit["reason"]
    assert out["timing"]["timed"] == 2 and out["timing"]["partial"] is None
    fits = out["shortlist"][0]
    assert fits["decision"].startswith("latency p99 ") and "<= 30 ms" in fits["decision"] and "n=14" in fits["decision"]
    timer = FakeTimer({"vit_b16": 95.0, "convnext_t": 20.0, "deit_s": 18.0, "deit_ti": 8.0})
    every = ask(FOUR, timer, max_latency_ms=30, time_all=True)
    assert sorted(timer.timed) == sorted(FOUR) and every["untimed"] == []


def test_a_model_without_accuracy_for_the_rank_is_listed_never_dropped():
    # vit_h14 and vit_l32 have no top-1 at 224 (timm's table): they cannot win a top1 rank, so once a ranked
    # model fits they are left untimed with why, never excluded
    timer = FakeTimer({"deit_ti": 8.0, "vit_h14": 900.0, "vit_l32": 20.0})
    out = ask(["vit_h14", "deit_ti", "vit_l32"], timer, max_latency_ms=30)
    assert timer.timed == ["deit_ti"] and out["excluded"] == []
    assert [u["model"] for u in out["untimed"]] == ["vit_l32", "vit_h14"]      # fewest GMACs first
    assert out["untimed"][0]["reason"].startswith("untimed: no top1 at 224 px to rank by, and deit_ti, ranked, fits")
    # when no ranked model fits they are timed, cheapest first (vit_l32: 15 GMACs, vit_h14: 167), and listed
    # after the ranked ones with why
    timer = FakeTimer({"deit_ti": 40.0, "vit_h14": 900.0, "vit_l32": 20.0})
    out = ask(["vit_h14", "deit_ti", "vit_l32"], timer, max_latency_ms=30)
    assert timer.timed == ["deit_ti", "vit_l32"]
    (fits,) = out["shortlist"]
    assert fits["model"] == "vit_l32" and fits["unranked"].startswith("no top1 at 224 px to rank by")
    assert out["untimed"][0]["reason"].startswith("untimed: no top1 at 224 px to rank by, and vit_l32, with no value")


def test_a_close_call_is_undecided_within_noise_with_both_figures():
    # a true median of 26 ms with a 10% spread: the p99 of 14 steps (30.7 ms) and its band (30.0-30.8) straddle 30 ms
    timer = FakeTimer({"convnext_t": 26.0, "deit_s": 10.0}, spread=0.1)
    out = ask(["convnext_t", "deit_s"], timer, max_latency_ms=30)
    (close,) = out["undecided"]
    assert close["model"] == "convnext_t" and close["reason"].startswith("undecided: within noise: latency p99 ")
    assert " vs 30 ms" in close["reason"] and "band" in close["reason"]
    # the undecided one does not stop the search: deit_s is timed and fits
    assert [r["model"] for r in out["shortlist"]] == ["deit_s"] and timer.timed == ["convnext_t", "deit_s"]


def test_others_load_widens_the_lower_edge():
    # 50 ms steps, others on half of our cores (threads: all of them): a quiet run could take 25 ms, under 30 ms,
    # so the model is not excluded on that evidence; the same steps on a quiet machine exclude it
    loaded = ask(["convnext_t"], FakeTimer({"convnext_t": 50.0}, spread=0.01, others=0.5), max_latency_ms=30)
    (close,) = loaded["undecided"]
    assert "quiet lower edge" in close["reason"] and close["evidence"]["quiet_lo_ms"] < 30 < close["evidence"]["lo_ms"]
    quiet = ask(["convnext_t"], FakeTimer({"convnext_t": 50.0}, spread=0.01), max_latency_ms=30)
    assert quiet["undecided"] == [] and quiet["excluded"][0]["model"] == "convnext_t"


def test_two_runs_decide_the_same_set():
    true_ms = {"vit_b16": 95.0, "convnext_t": 29.0, "deit_s": 31.0, "deit_ti": 8.0}
    runs = [ask(FOUR, FakeTimer(true_ms, seed=7, spread=0.08), max_latency_ms=30, time_all=True) for _ in range(2)]
    assert decided(runs[0]) == decided(runs[1])
    assert [e["reason"] for e in runs[0]["excluded"]] == [e["reason"] for e in runs[1]["excluded"]]
    # other seeds (other noise draws, the same machine): a decision is never reversed, only left undecided
    verdicts = {}
    for seed in range(8):
        shortlist, over, undecided = decided(ask(FOUR, FakeTimer(true_ms, seed=seed, spread=0.08), max_latency_ms=30,
                                                 time_all=True))
        for model in shortlist:
            verdicts.setdefault(model, set()).add("fits")
        for model in over:
            verdicts.setdefault(model, set()).add("over")
    assert all(len(v) == 1 for v in verdicts.values()), verdicts
    assert verdicts["vit_b16"] == {"over"} and verdicts["deit_ti"] == {"fits"}


def test_the_lower_bound_excludes_without_timing():
    # ViT-B/16 at 224: 17.56 GMACs of which nearly all in linear layers; at a GEMM peak of 100 GFLOP/s its compute
    # bound is 2 x 17.56e9 / 3 / 1e11 s = 117 ms: over a 30 ms budget, so it is never timed
    peak = {"peak_flops": 100e9}
    timer = FakeTimer({"convnext_t": 20.0, "vit_b16": 95.0}, peak=peak)
    out = ask(["vit_b16", "convnext_t"], timer, max_latency_ms=30)
    assert timer.timed == ["convnext_t"] and out["timing"]["bounded_out"] == 1
    (vit,) = out["excluded"]
    assert vit["reason"].startswith("lower bound ") and "> 30 ms on this machine, not timed" in vit["reason"]
    assert 2 * 17.0e9 / GEMM_MARGIN / 1e11 * 1e3 < vit["bound_ms"] < 2 * 17.6e9 / GEMM_MARGIN / 1e11 * 1e3


def test_lower_bound_formula():
    work = {"gemm_macs": 3e9, "other_macs": 12e9, "weight_bytes": 10 * 2 ** 20, "batch_size": 2, "train": False}
    # compute: 2 x 2 x (3e9/3 + 12e9/12) / 1e12 = 8 ms; memory: (10 MiB - 4 MiB) / (2 x 1e9) = 3.1 ms
    peak = {"peak_flops": 1e12, "mem_bandwidth": 1e9}
    assert lower_bound_ms(work, peak, "cpu", 4 * 2 ** 20) == pytest.approx(2 * 2 * (1e9 + 1e9) / 1e12 * 1e3)
    big = {**work, "weight_bytes": 104 * 2 ** 20}      # (104 - 4) MiB / 2e9 B/s = 52.4 ms > 8 ms
    assert lower_bound_ms(big, peak, "cpu", 4 * 2 ** 20) == pytest.approx(100 * 2 ** 20 / 2e9 * 1e3)
    assert lower_bound_ms(work, peak, "cuda", None) == 0.0 and lower_bound_ms(work, {}, "cpu", None) == 0.0
    assert CONV_MARGIN == 4 * GEMM_MARGIN      # Winograd F(4x4, 3x3): 4x fewer multiplies than nominal


def test_the_bound_uses_the_largest_trustworthy_peak_never_a_loaded_probe():
    from zoo.select.bound import trusted_rates

    # issue 42: a probe at 88% foreign load read 115 GFLOP/s; the committed quiet figure of that CPU is 204
    committed = {"peak_flops": 204e9, "peak_flops_source": "committed for AMD EPYC, 2 threads (...)"}
    loaded = {"peak_flops": 115e9, "peak_foreign_cpu_share": 0.88, "mem_bandwidth": 5e9,
              "bandwidth_foreign_cpu_share": 0.88}
    used = trusted_rates(loaded, committed, None, cores=2)
    assert used["peak_flops"] == 204e9 and used["peak_flops_source"].startswith("committed for AMD EPYC")
    assert used["peak_flops_refused"] == "this machine's probe ran with others on 88% of our cores"
    assert "mem_bandwidth" not in used              # a loaded triad is not used, and none is committed
    # never scaled: 115 / (1 - 0.88) = 958 GFLOP/s would be the old "quiet machine's" figure
    assert trusted_rates(loaded, {}, None, cores=2).get("peak_flops") is None
    # a quiet probe above the committed figure wins (a larger peak only lowers the bound)
    quiet = {"peak_flops": 250e9, "peak_foreign_cpu_share": 0.05}
    assert trusted_rates(quiet, committed, None, cores=2)["peak_flops_source"] == "this machine's quiet probe"
    # others on 1 of 2 cores while we ran on the other (threads 1) is no load on ours
    assert trusted_rates({**loaded, "peak_foreign_cpu_share": 0.5}, {}, 1, cores=2)["peak_flops"] == 115e9


def test_the_committed_figure_is_results_peaks_json_of_that_cpu():
    from committed import committed_text
    from zoo.select.bound import committed_rates

    kept = json.loads(committed_text("results/peaks.json"))
    intel = "Intel(R) Xeon(R) Processor"
    rates = committed_rates(intel, "fp32", 2)
    assert rates["peak_flops"] == kept[f"{intel} | - | 2.14.1+cu130 | cpu | fp32 | 2 threads"]["peak_flops"]
    assert rates["mem_bandwidth"] == kept[f"bandwidth | {intel} | - | 2.14.1+cu130 | cpu | 2 threads"]["mem_bandwidth"]
    assert committed_rates(intel, "fp32", 1)["peak_flops"] == rates["peak_flops"]     # 2 threads bound 1
    assert committed_rates(intel, "fp32", 4) == {} and committed_rates("Some Other CPU", "fp32", 2) == {}
    assert "peak_flops" not in committed_rates(intel, "bf16", 2)


def test_a_loaded_probe_gives_way_to_the_committed_peak_and_the_answer_says_so():
    # ViT-B/16: 17.56 GMACs nearly all GEMM; 2 x 17.56e9 / 3 / 204e9 = 57 ms > 30 ms at the committed peak
    timer = FakeTimer({"convnext_t": 20.0, "vit_b16": 95.0},
                      peak={"peak_flops": 115e9, "peak_foreign_cpu_share": 0.88})
    timing = timer.timing()
    timing.committed = lambda task: {"peak_flops": 204e9, "peak_flops_source": "committed for this CPU (test)"}
    out = select(["vit_b16", "convnext_t"], 224, timing=timing, device="cpu", save=False, max_latency_ms=30)
    (vit,) = out["excluded"]
    assert "204 GFLOP/s GEMM peak (committed for this CPU (test))" in vit["reason"]
    assert 2 * 17.0e9 / GEMM_MARGIN / 204e9 * 1e3 < vit["bound_ms"] < 2 * 17.6e9 / GEMM_MARGIN / 204e9 * 1e3
    assert out["timing"]["bound_rates"]["peak_flops_source"] == "committed for this CPU (test)"


def test_the_budget_ends_timing_with_a_partial_answer():
    # 60 s a model against a 100 s budget: two are timed, the rest are untimed and the answer is partial
    timer = FakeTimer({m: 95.0 for m in FOUR}, overhead_s=60)
    out = ask(FOUR, timer, max_latency_ms=30, budget_s=100)
    assert timer.timed == ["vit_b16", "convnext_t"]
    assert out["timing"]["partial"] == {"reason": "budget spent (--budget-s 100)", "status": 3}
    assert [u["model"] for u in out["untimed"]] == ["deit_s", "deit_ti"]
    assert all(u["reason"] == "untimed: budget spent (--budget-s 100)" for u in out["untimed"])
    from zoo.select.cli import render

    text = render(out, "markdown")
    # the fake clock: 2 x (60 s + 14 steps of ~95 ms) = ~123 s
    assert re.match(r"PARTIAL ANSWER: budget spent \(--budget-s 100\); the untimed models below are not settled\n"
                    r"timed 2 \(reused 0 stored rows\), screened out before timing \(size, accuracy, counts\) 0, "
                    r"bounded out 0, untimed 2, in 12[2-4] s of a 100 s budget\nmeasured latency answers for the "
                    r"machine that timed it only", text)
    assert "untimed (2):\n- deit_s: untimed: budget spent" in text


def test_the_budget_alarm_stops_a_timing_in_flight():
    import time

    from zoo.select.timing import budget_alarm

    with pytest.raises(BudgetSpent), budget_alarm(0.05):
        time.sleep(5)                       # a timing that would overrun the budget
    with pytest.raises(BudgetSpent), budget_alarm(0.05):
        try:
            time.sleep(5)
        except BudgetSpent:                 # lost, as in a finalizer (a weakref callback): the next one lands
            pass
        time.sleep(5)
    with budget_alarm(0.05) as disarm:
        with pytest.raises(BudgetSpent):
            time.sleep(5)
        disarm()                            # caught and disarmed: nothing more is raised
        time.sleep(1.2)


def test_a_budget_spent_while_probing_the_peak_times_nothing():
    timer = FakeTimer({m: 8.0 for m in FOUR})
    timing = timer.timing()

    def probe(task):
        raise BudgetSpent()

    timing.peak = probe
    out = select(FOUR, 224, timing=timing, device="cpu", save=False, max_latency_ms=30)
    assert timer.timed == [] and out["shortlist"] == [] and len(out["untimed"]) == 4
    assert out["timing"]["partial"] == {"reason": "budget spent (--budget-s) while probing the peak", "status": 3}


@pytest.mark.parametrize("error, status", [(BudgetSpent(), 3), (KeyboardInterrupt(), 130), (Terminated(), 143)])
def test_an_interrupt_while_timing_keeps_the_answer_so_far(error, status, monkeypatch, tmp_path, capsys):
    import zoo.select.timing

    timer = FakeTimer({"vit_b16": 95.0, "convnext_t": 20.0}, interrupt_at="convnext_t")
    timer.interrupt = error
    monkeypatch.setattr(zoo.select.timing, "_default_timing", lambda q, store, saving: timer.timing())
    code = main(["--models", "vit_b16,convnext_t", "--max-latency-ms", "30", "--latency-stat", "p99",
                 "--device", "cpu", "--out", str(tmp_path), "--format", "json"])
    assert code == status
    out = json.loads(capsys.readouterr().out)
    assert out["timing"]["partial"]["status"] == status and out["excluded"][0]["model"] == "vit_b16"
    assert out["untimed"][0]["model"] == "convnext_t" and "while timing it" in out["untimed"][0]["reason"]
    stored = json.loads((tmp_path / "results" / "select-answer.json").read_text())
    assert stored["timing"]["partial"]["status"] == status


def test_save_plan_then_from_plan_times_only_the_candidates(monkeypatch, tmp_path, capsys):
    import zoo.select.timing

    plan = tmp_path / "plan.json"
    assert main(["--models", "deit_ti,vit_b16,vit_h14", "--max-gmacs", "10", "--max-latency-ms", "30",
                 "--latency-stat", "p99", "--device", "cpu", "--save-plan", str(plan)]) == 0
    assert "2 screened out" in capsys.readouterr().out
    saved = json.loads(plan.read_text())
    assert saved["candidates"] == ["deit_ti"] and saved["query"]["max_latency_ms"] == 30
    assert {e["model"] for e in saved["screened_out"]} == {"vit_b16", "vit_h14"}
    timer = FakeTimer({"deit_ti": 8.0})
    monkeypatch.setattr(zoo.select.timing, "_default_timing", lambda q, store, saving: timer.timing())
    assert main(["--from-plan", str(plan), "--no-save", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert timer.timed == ["deit_ti"] and [r["model"] for r in out["shortlist"]] == ["deit_ti"]
    assert {e["model"] for e in out["excluded"]} == {"vit_b16", "vit_h14"} and out["query"]["latency_stat"] == "p99"
    assert main(["--from-plan", str(plan), "--max-gmacs", "3"]) == 2
    assert "the plan fixes the query; drop --max-gmacs" in capsys.readouterr().err


def test_ranked_by_latency_each_row_says_whether_it_is_ahead_of_the_next_beyond_the_noise():
    # deit_ti 8 ms and deit_s 20 ms are apart by far more than their 3% spread; deit_s and convnext_t (20.2 ms) not
    timer = FakeTimer({"deit_ti": 8.0, "deit_s": 20.0, "convnext_t": 20.2})
    out = ask(["deit_ti", "deit_s", "convnext_t"], timer, rank="latency")
    rows = out["shortlist"]
    assert [r["model"] for r in rows][0] == "deit_ti" and rows[0]["vs_next"] == f"ahead of {rows[1]['model']}"
    assert rows[1]["vs_next"] == f"within noise of {rows[2]['model']}" and "vs_next" not in rows[2]
    assert sorted(timer.timed) == ["convnext_t", "deit_s", "deit_ti"]     # a measured rank times them all


def test_ranked_by_latency_a_model_whose_bound_is_above_the_best_is_not_timed():
    # at a 1 TFLOP/s GEMM peak the compute bounds are 2 x GMACs / 3 ms: deit_ti 0.83, deit_s 3.07, vit_b16 11.7;
    # deit_ti, timed first (the lowest bound), runs 2 ms: neither of the others can beat it
    timer = FakeTimer({"deit_ti": 2.0, "deit_s": 4.0, "vit_b16": 20.0}, peak={"peak_flops": 1e12})
    out = ask(["vit_b16", "deit_s", "deit_ti"], timer, rank="latency")
    assert timer.timed == ["deit_ti"] and [r["model"] for r in out["shortlist"]] == ["deit_ti"]
    assert [u["model"] for u in out["untimed"]] == ["deit_s", "vit_b16"]
    found = re.match(r"untimed: its lower bound ([\d.]+) ms is above deit_ti's p99 band edge",
                     out["untimed"][0]["reason"])
    # DeiT-S: 4.6 GMACs, all but its patch embedding (a 16x16 conv, 0.06 GMACs: the conv margin) in linear layers
    assert found and 2 * 4.5e9 / 3 / 1e12 * 1e3 < float(found.group(1)) <= 2 * 4.6e9 / 3 / 1e12 * 1e3
