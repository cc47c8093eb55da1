"""Secrets never reach a report."""

from __future__ import annotations

from hangdoctor.redact import REDACTED, redact_argv, redact_pair, select_environment


def test_environment_keeps_useful_variables_and_hides_secrets():
    env = select_environment({
        "RANK": "1", "WORLD_SIZE": "2", "NCCL_DEBUG": "INFO",
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz",
        "WANDB_API_KEY": "0123456789abcdef", "AWS_SECRET_ACCESS_KEY": "x", "HOME": "/root",
        "MASTER_ADDR": "10.0.0.1",
    })
    assert env["RANK"] == "1" and env["NCCL_DEBUG"] == "INFO" and env["MASTER_ADDR"] == "10.0.0.1"
    assert env["HF_TOKEN"] == REDACTED and env["WANDB_API_KEY"] == REDACTED
    assert "HOME" not in env and "AWS_SECRET_ACCESS_KEY" not in env


def test_command_line_options_with_secrets():
    argv = redact_argv(["python", "train.py", "--hf-token", "abc", "--password=hunter2",
                        "--lr", "0.1", "--data", "https://user:pw@example.com/x"])
    assert argv[3] == REDACTED
    assert argv[4] == f"--password={REDACTED}"
    assert argv[5:7] == ("--lr", "0.1")
    assert "pw@" not in argv[8] and REDACTED in argv[8]


def test_token_shaped_values_are_hidden_whatever_their_name():
    assert redact_pair("note", "use ghp_" + "a" * 36) == f"use {REDACTED}"
    path = "/data/desk-organiser-project-2024"
    assert redact_pair("path", path) == path
    assert redact_pair("author", "Ada") == "Ada"
