"""One format for /etc/nccl.conf and the launchers' env file (plugins/module_utils/nccl/env_file.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file as ef

# What the nccl_env role writes on a RoCE node: the computed variables plus an extra one.
ROCE_ENV = {
    "NCCL_IB_DISABLE": "0",
    "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_NET_GDR_LEVEL": "PHB",
    "NCCL_SOCKET_IFNAME": "=nodeaddr0",
    "GLOO_SOCKET_IFNAME": "nodeaddr0",
    "NCCL_IB_TC": "104",
    "NCCL_DEBUG_SUBSYS": "INIT,NET",
}


def test_render_is_what_the_role_templates_wrote() -> None:
    # Byte for byte the output of the former templates/nccl.conf.j2 (Jinja dictsort: case-insensitive).
    text = ef.render(
        ROCE_ENV,
        [
            "Ansible managed",
            "NCCL reads this file at init (environment variables still win). Transport: rdma.",
        ],
    )
    assert text == (
        "# Ansible managed\n"
        "# NCCL reads this file at init (environment variables still win). Transport: rdma.\n"
        "GLOO_SOCKET_IFNAME=nodeaddr0\n"
        "NCCL_DEBUG_SUBSYS=INIT,NET\n"
        "NCCL_IB_DISABLE=0\n"
        "NCCL_IB_GID_INDEX=3\n"
        "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n"
        "NCCL_IB_TC=104\n"
        "NCCL_NET_GDR_LEVEL=PHB\n"
        "NCCL_SOCKET_IFNAME==nodeaddr0\n"
    )


def test_order_ignores_case_like_jinja_dictsort() -> None:
    # "_" sorts before letters in lower case, after them in upper case.
    assert ef.render({"NCCL_IBX": "1", "NCCL_IB_X": "2"}) == "NCCL_IB_X=2\nNCCL_IBX=1\n"


@pytest.mark.parametrize(
    "env",
    [
        ROCE_ENV,
        {},
        {"NCCL_IB_DISABLE": "1", "GLOO_SOCKET_IFNAME": "mesh0", "NCCL_IB_TC": "0"},
        {"A": "b c", "B": "", "C": "x=y", "D": "'a", "E": "#not a comment", "lower_case": "ok"},
    ],
)
def test_round_trip(env: dict[str, str]) -> None:
    text = ef.render(env, ["Ansible managed", "two\nlines"])
    assert ef.parse(text) == env
    assert ef.render(ef.parse(text), ["Ansible managed", "two\nlines"]) == text


def test_values_are_written_as_text() -> None:
    assert ef.parse(ef.render({"N": 5, "T": True})) == {"N": "5", "T": "True"}


def test_comment_lines() -> None:
    assert ef.render({}, ["a", "b\nc"]) == "# a\n# b\n# c\n"
    assert ef.render({}) == ""


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"A": "x\ny"}, "environment variable A: value 'x\\ny' does not fit on one KEY=value line"),
        ({"A": " x"}, "value ' x'"),
        ({"A": "x\t"}, "value 'x\\t'"),
        ({"A": '"quoted"'}, "value '\"quoted\"'"),
        ({"1A": "x"}, "environment variable name '1A' is not a valid name"),
        ({"A B": "x"}, "name 'A B'"),
    ],
)
def test_render_refuses_what_would_not_read_back(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ef.EnvFileError) as info:
        ef.render(env)
    assert needle in str(info.value)


def test_parse_reads_shell_and_systemd_style() -> None:
    text = "# written by nccl_env\nNCCL_IB_DISABLE=1\nexport NCCL_SOCKET_IFNAME='=nodeaddr0'\n\nA=\"b c\"\n"
    assert ef.parse(text) == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=nodeaddr0", "A": "b c"}
    assert ef.parse("  B = x  \n") == {"B": "x"}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("A=1\nnot an assignment\n", "line 2 is not KEY=VALUE: 'not an assignment'"),
        ("1A=x\n", "line 1 is not KEY=VALUE"),
        ("=x\n", "line 1 is not KEY=VALUE"),
    ],
)
def test_parse_names_the_bad_line(text: str, needle: str) -> None:
    with pytest.raises(ef.EnvFileError) as info:
        ef.parse(text)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)
