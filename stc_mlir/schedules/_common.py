"""Helpers shared by the built-in schedules."""

from __future__ import annotations

from stc_mlir.dialects.schedule import batch_of
from stc_mlir.graph_schedule import Function, ScheduleError


def check_batch(schedule: str, func: Function, batch: int) -> None:
    """A built-in schedule is written for one batch: the model's must be the same."""
    model_batch = batch_of(func.params[0].type)
    if model_batch != batch:
        raise ScheduleError(
            f"{schedule}(batch={batch}) is applied to a model with batch {model_batch}: "
            f"pass batch={model_batch} or build the model with batch {batch}"
        )
