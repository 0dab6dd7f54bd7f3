"""What index.html opens on: the default three models compared, the worked answers in one line each, and the
facets (family, size, pretraining) the page's tables filter by. Built from the same rows as the sections."""
from __future__ import annotations

from ..console.markdown import markdown_table, mib
from ..models.accuracy import checkpoint_at, pretraining_of
from .rows import ReportRows, machine_name, main_machine

DEFAULT_THREE = ("vit_b16", "swin_t", "convnext_t")      # README's first command: zoo.compare --models of these
SUMMARY_SIZE = 224
# size classes by parameter count (millions): what "small" means when filtering a table
SIZE_CLASSES = ((10, "tiny (<10M)"), (40, "small (10-40M)"), (120, "base (40-120M)"), (float("inf"), "large (>120M)"))


def facets(data: ReportRows) -> dict[str, dict[str, str]]:
    """model -> {family, size, pretraining}: the pretraining group of the checkpoint the tables show by
    default (at its native size when one is evaluated there), '-' where it has none."""
    found: dict[str, dict[str, str]] = {}
    for r in sorted(data.cost, key=lambda r: (r["model"], r["img_size"] or 0)):
        if r["model"] in found:
            continue
        group = pretraining_of(r["model"], r["img_size"]) if r["img_size"] else pretraining_of(r["model"])
        size = "-" if r.get("params") is None else next(n for limit, n in SIZE_CLASSES if r["params"] / 1e6 < limit)
        found[r["model"]] = {"family": r.get("family") or "-", "size": size, "pretraining": group or "-"}
    return found


def _speed(data: ReportRows, model: str, backend: str) -> str | None:
    """img/s of the latest batch-1 fp32 inference timing on the main machine, marked when it was loaded (other
    processes on the cores, or a step-latency cv above 0.2: the row's noisy flag)."""
    machine = main_machine(data.throughput)
    times = [r for r in data.throughput if r["model"] == model and r["img_size"] == SUMMARY_SIZE
             and r["batch_size"] == 1 and r["settings"]["dtype"] == "fp32" and not r["settings"].get("train")
             and r["settings"].get("backend", "eager") == backend and machine_name(r) == machine]
    if not times:
        return None
    r = times[-1]
    loaded, cv = r.get("foreign_cpu_share"), r.get("cv")
    mark = "" if not r.get("noisy") else f" (loaded: others used {loaded:.0%} of the CPU)" if (loaded or 0) > 0.15 \
        else f" (noisy: cv {cv:.2f})" if cv is not None else " (noisy)"
    return f"{r['imgs_per_s']:,.2f}{mark}"


def default_three(data: ReportRows) -> tuple[str, str]:
    """(a markdown table of the default three at 224 px, a line naming the machine of its timings)."""
    cost = {r["model"]: r for r in data.square_cost if r["img_size"] == SUMMARY_SIZE}
    rows = []
    for model in DEFAULT_THREE:
        r, shown = cost.get(model), checkpoint_at(model, SUMMARY_SIZE)
        eager, ort = _speed(data, model, "eager"), _speed(data, model, "onnxruntime")
        rows.append([model, r and f"{r['params'] / 1e6:.1f}", r and f"{r['macs'] / 1e9:.2f}",
                     r and mib(r["act_peak_bytes"]),
                     shown and f"{shown['top1']:.2f}", shown and shown["weights_short"], shown and shown["pretraining"],
                     eager, ort])
    table = markdown_table(["model", "params (M)", "GMACs / image", "act peak (MiB)", "top-1 % (default)", "weights",
                            "pretraining", "img/s eager", "img/s ONNX Runtime"], rows)
    machine = main_machine(data.throughput)
    where = (f"At {SUMMARY_SIZE} px, batch 1, fp32; counts on the meta device; img/s measured on {machine} "
             f"('-': not timed there)." if machine else
             f"At {SUMMARY_SIZE} px, batch 1, fp32; counts on the meta device; no timed rows in results/.")
    return table, where


def answer_lines(answers: list | None) -> list[str]:
    """Each worked question with the first model of its shortlist (or that none qualified)."""
    lines = []
    for item in answers or []:
        try:
            lines.append(_answer_line(item))
        except (KeyError, TypeError, ValueError, AttributeError):      # a hand-edited answers.json
            lines.append("an unreadable stored answer (rewrite them with `python -m zoo.select --answers`)")
    return lines


def select_answer_line(answer: dict | None) -> list[str]:
    """The last measured zoo.select answer (results/select-answer.json) in one line, where there is one."""
    if answer is None:
        return []
    try:
        line = _answer_line({"question": "Your last measured zoo.select (results/select-answer.json)",
                             "answer": answer})
    except (KeyError, TypeError, ValueError, AttributeError):
        return []
    best = (answer.get("shortlist") or [{}])[0]
    if best.get("latency_ms_p50") is not None:
        line += f", p50 {best['latency_ms_p50']:,.1f} ms" + (" (noisy)" if best.get("noisy") else "")
    return [line]


def _answer_line(item: dict) -> str:
    """The question and the first model of its shortlist; a partial answer (zoo.select stopped by its budget, Ctrl-C
    or SIGTERM) or one with models left undecided or untimed says so, never that no model qualifies."""
    answer = item["answer"]
    shortlist = answer.get("shortlist") or []
    partial = (answer.get("timing") or {}).get("partial")
    open_models = len(answer.get("undecided") or []) + len(answer.get("untimed") or [])
    stopped = f"partial answer: {partial['reason']}" if partial else ""
    if not shortlist:
        if not (partial or open_models):
            return f"{item['question']}: no model qualifies"
        left = f"{open_models} model(s) left undecided or untimed" if open_models else ""
        return f"{item['question']}: no model decided yet ({'; '.join(filter(None, [stopped, left]))})"
    best = shortlist[0]
    top1 = f"top-1 {best['top1']:g}% ({best.get('weights_label')}, {best.get('pretraining')})" \
        if best.get("top1") is not None else "no top-1"
    gmacs = f", {best['gmacs']:.2f} GMACs" if best.get("gmacs") is not None else ""
    return f"{item['question']}: {best['model']}, {top1}{gmacs}" + (f" ({stopped})" if partial else "")
