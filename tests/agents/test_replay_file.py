"""Replay files: parsing and the errors a bad file gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebench.agents.replay import ReplayAgent, ReplayFileError, parse_actions


def test_parses_all_actions() -> None:
    text = "\n".join([
        '# a comment',
        '{"action": "exec", "cmd": "ls", "timeout": 5}',
        '{"action": "write_file", "path": "a.py", "content": "x = 1"}',
        '{"action": "write_file", "path": "b.bin", "content_b64": "AAE="}',
        '',
        '{"action": "read_file", "path": "a.py"}',
        '{"action": "score", "at": 12.5}',
        '{"action": "sleep", "seconds": 1}',
        '{"action": "time_left"}',
    ])
    actions = parse_actions(text)
    assert [a.kind for a in actions] == ["exec", "write_file", "write_file", "read_file",
                                         "score", "sleep", "time_left"]
    assert actions[0].args == {"cmd": "ls", "timeout": 5} and actions[0].line == 2
    assert actions[4].args["at"] == 12.5


@pytest.mark.parametrize("line, complaint", [
    ("not json", "not JSON"),
    ("[1, 2]", "each line needs"),
    ('{"action": "dance"}', "each line needs"),
    ('{"action": "exec"}', "needs 'cmd'"),
    ('{"action": "exec", "cmd": 5}', "wrong type"),
    ('{"action": "exec", "cmd": "ls", "timeout": -1}', "non-negative"),
    ('{"action": "exec", "cmd": "ls", "color": "red"}', "unknown field"),
    ('{"action": "write_file", "path": "a"}', "one of content"),
    ('{"action": "write_file", "path": "a", "content": "x", "content_b64": "eA=="}',
     "one of content"),
    ('{"action": "write_file", "path": "a", "content_b64": "!!"}', "not base64"),
    ('{"action": "sleep", "seconds": true}', "wrong type"),
    ('{"action": "sleep", "seconds": NaN}', "non-negative"),
])
def test_bad_lines_name_the_line_and_the_problem(line: str, complaint: str) -> None:
    with pytest.raises(ReplayFileError, match=complaint) as info:
        parse_actions('{"action": "score"}\n' + line, "f.jsonl")
    assert "f.jsonl:2" in str(info.value)


def test_agent_checks_its_file_when_made(tmp_path: Path) -> None:
    with pytest.raises(ReplayFileError, match="cannot read"):
        ReplayAgent(str(tmp_path / "missing.jsonl"))
    with pytest.raises(ReplayFileError, match="needs a file"):
        ReplayAgent("")
    good = tmp_path / "ok.jsonl"
    good.write_text('{"action": "score"}\n')
    assert ReplayAgent(str(good)).name == "replay:ok.jsonl"
