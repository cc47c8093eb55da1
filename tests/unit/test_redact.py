"""Secrets never reach a report."""

from __future__ import annotations

from hangdoctor.redact import (
    REDACTED,
    redact_argv,
    redact_pair,
    redact_value,
    select_environment,
)


def test_environment_keeps_useful_variables_and_hides_secrets():
    env = select_environment(
        {
            "RANK": "1",
            "WORLD_SIZE": "2",
            "NCCL_DEBUG": "INFO",
            "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz",
            "WANDB_API_KEY": "0123456789abcdef",
            "AWS_SECRET_ACCESS_KEY": "x",
            "HOME": "/root",
            "MASTER_ADDR": "10.0.0.1",
        }
    )
    assert env["RANK"] == "1" and env["NCCL_DEBUG"] == "INFO" and env["MASTER_ADDR"] == "10.0.0.1"
    assert env["HF_TOKEN"] == REDACTED and env["WANDB_API_KEY"] == REDACTED
    assert "HOME" not in env and "AWS_SECRET_ACCESS_KEY" not in env


def test_command_line_options_with_secrets():
    argv = redact_argv(
        [
            "python",
            "train.py",
            "--hf-token",
            "abc",
            "--password=hunter2",
            "--lr",
            "0.1",
            "--data",
            "https://user:pw@example.com/x",
        ]
    )
    assert argv[3] == REDACTED
    assert argv[4] == f"--password={REDACTED}"
    assert argv[5:7] == ("--lr", "0.1")
    assert "pw@" not in argv[8] and REDACTED in argv[8]


def test_token_shaped_values_are_hidden_whatever_their_name():
    assert redact_pair("note", "use ghp_" + "a" * 36) == f"use {REDACTED}"
    path = "/data/desk-organiser-project-2024"
    assert redact_pair("path", path) == path
    assert redact_pair("author", "Ada") == "Ada"


# Well-formed examples of each provider's token format (none is a live credential; the AWS pair
# is the one in AWS's own documentation).
TOKENS = {
    "hugging face": "hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
    "aws access key id": "AKIAIOSFODNN7EXAMPLE",
    "github classic": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z01",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "openai project": "sk-proj-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z" * 2,
    "openai legacy": "sk-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z0123456789ab",
}
# Secrets with no shape of their own: only their name gives them away.
NAMED = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
}


def test_known_token_formats_in_log_lines():
    for kind, token in TOKENS.items():
        for line in (
            f"logged in with {token}",
            f"Authorization: Bearer {token}",
            f"token={token}",
            f"'{token}'",
        ):
            assert token not in redact_value(line), (kind, line)
            assert REDACTED in redact_value(line)


def test_named_secrets_in_log_lines_and_credential_files():
    for name, secret in NAMED.items():
        for line in (
            f"export {name}={secret}",
            f"{name.lower()} = {secret}",
            f'{{"{name}": "{secret}"}}',
            f"{name}: {secret}",
        ):
            assert secret not in redact_value(line), line


def test_ordinary_lines_are_left_alone():
    for line in (
        "tokenizer=bert-base-uncased max_tokens: 4096",
        "step 12 loss: 0.8123 lr=3e-4",
        "epoch 3: 100%|##########| 50/50 [00:12<00:00, 4.1it/s]",
        "NCCL INFO comm 0x5555 rank 1 nranks 2 cudaDev 1 busId 3b000",
        "commit 0123456789abcdef0123456789abcdef01234567",
    ):
        assert redact_value(line) == line


def test_known_token_formats_in_environment_and_command_lines():
    env = select_environment(
        {"HF_TOKEN": TOKENS["hugging face"], **NAMED, "TORCH_HOME": TOKENS["openai legacy"]}
    )
    assert not set(env.values()) & {*TOKENS.values(), *NAMED.values()}
    argv = redact_argv(
        [
            "train.py",
            "--hub-token",
            TOKENS["hugging face"],
            f"--wandb-key={NAMED['WANDB_API_KEY']}",
            TOKENS["github classic"],
            f"OPENAI_API_KEY={TOKENS['openai project']}",
        ]
    )
    assert not set(" ".join(argv).split()) & {*TOKENS.values(), *NAMED.values()}
    assert not any(secret in " ".join(argv) for secret in (*TOKENS.values(), *NAMED.values()))
