"""Hours and dollars to train: a predicted step (zoo.predict.train) times the steps of a schedule, on K
data-parallel GPUs. Pure arithmetic, no torch.

steps = ceil(epochs x train_images / (batch x K)); each step adds the gradient all-reduce of a ring over K
devices, 2 (K - 1) / K x gradient bytes through each device's link (NCCL's ring; its "bus bandwidth" is this
algorithm factor times the data over the time), at the link's per-direction datasheet bandwidth (half the
bidirectional figure datasheets quote), with no efficiency factor: the all-reduce time is a lower bound.
It is counted as NOT overlapped with the backward (DDP overlaps its buckets with the backward, so the true step
lies between the compute alone and compute + all-reduce; both are printed). wall hours = steps x step time;
device hours = wall hours x K; cost = device hours x the price per device-hour you give (none is shipped).
Every figure scales with the step time, so each carries the step's band (p10-p90).
"""
from __future__ import annotations

import math



def allreduce_seconds(grad_bytes: int, gpus: int, sheet) -> float:
    """Ring all-reduce of the gradients over `gpus` devices at the per-direction bandwidth of the sheet's link
    (analysis.predict.devices: link_bandwidth, bidirectional), a lower bound; ValueError for more than one device
    of a sheet without a sourced link."""
    if gpus == 1:
        return 0.0
    if sheet.link_bandwidth is None:
        from .devices import DEVICE_SHEETS

        linked = [s.name for s in DEVICE_SHEETS.values() if s.link_bandwidth is not None]
        raise ValueError(f"no interconnect figure for {sheet.name} (known: {', '.join(linked)}); --gpus 1 needs none")
    return 2 * (gpus - 1) / gpus * grad_bytes / (sheet.link_bandwidth / 2)


def schedule(step_seconds: float, band: tuple[float, float], batch: int, epochs: float, train_images: int,
             gpus: int, allreduce_s: float, price_per_hour: float | None = None) -> dict:
    """Steps, wall and device hours (and dollars) of the schedule; band = (p10, p90) of img/s relative to the
    expectation, so hours take 1/p90 (fast) to 1/p10 (slow)."""
    steps = math.ceil(epochs * train_images / (batch * gpus))
    step = step_seconds + allreduce_s
    wall = steps * step / 3600
    fields = {"train_steps": steps, "train_global_batch": batch * gpus, "train_allreduce_ms": allreduce_s * 1e3,
              "train_step_with_allreduce_ms": step * 1e3,
              "train_wall_hours": wall, "train_wall_hours_fast": wall * _fast(step_seconds, allreduce_s, band[1]),
              "train_wall_hours_slow": wall * _fast(step_seconds, allreduce_s, band[0]),
              "train_wall_hours_overlapped": steps * max(step_seconds, allreduce_s) / 3600,
              "train_device_hours": wall * gpus, "gpus": gpus}
    fields["train_device_hours_fast"] = fields["train_wall_hours_fast"] * gpus
    fields["train_device_hours_slow"] = fields["train_wall_hours_slow"] * gpus
    if price_per_hour is not None:
        fields.update(price_per_hour_usd=price_per_hour, train_usd=fields["train_device_hours"] * price_per_hour,
                      train_usd_fast=fields["train_device_hours_fast"] * price_per_hour,
                      train_usd_slow=fields["train_device_hours_slow"] * price_per_hour)
    return fields


def _fast(compute: float, allreduce: float, rate_factor: float) -> float:
    """The step time at `rate_factor` x the expected img/s of the compute (the all-reduce bound is unbanded),
    relative to the expected step."""
    return (compute / rate_factor + allreduce) / (compute + allreduce)
