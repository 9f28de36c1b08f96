"""scripts/bench_focus.py: the share of gold supporting sentences a focused passage keeps."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_focus.py"


def test_counts_the_supporting_sentences_each_setting_keeps(tmp_path: Path) -> None:
    filler = [f" Filler sentence number {n} says nothing of use here." for n in range(20)]
    sentences = ["Ada Vale (1900-1980) was a painter."] + filler + [" She was born in Tarn."]
    data = [{"_id": "q1", "question": "Where was Ada Vale born?", "answer": "Tarn", "type": "bridge",
             "supporting_facts": [["Ada Vale", 0], ["Ada Vale", 21], ["Missing page", 0]],
             "context": [["Ada Vale", sentences], ["Other", ["Nothing here."]]]}]
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, str(SCRIPT), "--dataset", "hotpotqa", "--file", str(path),
                          "--limits", "200"], capture_output=True, text=True, check=True).stdout
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in out.splitlines()[3:]}
    assert "1 supporting paragraphs, 2 supporting sentences" in out
    assert rows["cut at 700 (focus off)"] == "0.500"  # the birthplace is past the first 700 characters
    assert rows["focus_chars 200"] == "1.000"  # the first sentence and the one about the query
