"""Trainer integrations: a Lightning `Callback` (`hangdoctor.integrations.lightning`), a Hugging
Face `TrainerCallback` (`hangdoctor.integrations.transformers`) and helpers for an accelerate
loop (`hangdoctor.integrations.accelerate`). They tell hangdoctor's in-job SDK which phase the
job is in (validation, evaluation, checkpointing, logging), with its own time budget, which rank
this process is, and that training steps go on.

Importing this package imports no framework: each module imports its own framework, and says
which package to install when it is missing. The phase names are identifiers that stay English
in every language, as report.json's field names do."""
