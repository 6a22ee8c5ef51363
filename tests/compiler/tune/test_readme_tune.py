"""The README's auto-tuning example runs: the tuned layer takes the best knobs found."""

from tests.readme import run_readme_block


def test_readme_tuning_example(tmp_path, monkeypatch):
    out = run_readme_block("## Auto-tuning", tmp_path, monkeypatch)  # asserts the cycles
    assert "best of 8 trials" in out
    assert (tmp_path / "conv.jsonl").read_text().count("\n") == 8
