"""Built-in manual graph schedules (the seeds' `tb.kernel.schedule`), written with
`stc_mlir.graph_schedule`: `schedule(mod, batch=...) -> mod`."""

from stc_mlir.schedules.bert import bert_schedule
from stc_mlir.schedules.default import default_schedule
from stc_mlir.schedules.deepfm import deepfm_schedule
from stc_mlir.schedules.resnet50 import resnet50_schedule

SCHEDULES = {"resnet50": resnet50_schedule, "bert-base": bert_schedule, "deepfm": deepfm_schedule}
"""Built-in model name -> its manual schedule (`default_schedule` fits any model)."""

__all__ = ["SCHEDULES", "bert_schedule", "deepfm_schedule", "default_schedule", "resnet50_schedule"]
