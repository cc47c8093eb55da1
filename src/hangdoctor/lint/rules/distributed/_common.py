"""What several distributed lint rules share."""

from __future__ import annotations

#: A module that never mentions a rank or a main-process flag has no rank condition. (Only
#: words that contain none of the others: `rank` already covers `Get_rank`, `rank_zero`.)
RANKISH = (
    "rank",
    "RANK",
    "main_process",
    "is_main",
    "master",
    "process_zero",
    "global_zero",
    "local_zero",
    "is_chief",
    "process_index",
    "proc_id",
    "PROCID",
    "is_last_process",
    "on_process",
    "local_process",
)
