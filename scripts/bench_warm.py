"""Prompt tokens evaluated and seconds of each role's first call in a fresh process, with and without warm role prefixes.

One process per run: it loads the configured model (the home's settings), then sends one real prompt of each
role (decomposer, verifier, assembler, retriever), each after ``forget_prompts`` as a benchmark question would,
and prints one JSON line per call and one for the load. Run it three times in a fresh home to compare:

    REAGENT_HOME=/tmp/h REAGENT_LLM_WARM_PREFIXES=0 .venv/bin/python scripts/bench_warm.py   # cold
    REAGENT_HOME=/tmp/h .venv/bin/python scripts/bench_warm.py    # first run: takes the states, writes them
    REAGENT_HOME=/tmp/h .venv/bin/python scripts/bench_warm.py    # a fresh process: reads them, starts warm
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from reagent_local.agents import PROMPTS
from reagent_local.agents.schemas import Decomposition, FinalAnswer, Reformulation, SubAnswer
from reagent_local.config import load_config
from reagent_local.reasoning.wiring import load_llm
from reagent_local.runtime.prompts import render_messages

PASSAGES = "\n".join([
    "Passages:",
    "[1] George of Podebrady: George of Kunstat and Podebrady (1420 - 1471), also known as Podebrad, was King of "
    "Bohemia from 1458 to 1471. He was a leader of the Hussites, the moderate Utraquist faction, and ruled as regent "
    "for the young Ladislaus the Posthumous before he was elected king by the Bohemian estates.",
    "[2] Joanna of Rozmital: Joanna of Rozmital (c. 1430 - 1475) was Queen of Bohemia as the second wife of George of "
    "Podebrady. She was the daughter of John of Rozmital and Blatna and a sister of Leo of Rozmital, whose journey "
    "across Europe was described by his companions.",
    "[3] Kunigunde of Sternberg: Kunigunde of Sternberg (1425 - 1449) was the first wife of George of Podebrady. She "
    "died young, leaving several children, among them Catherine of Podebrady, who later married Matthias Corvinus.",
    "[4] Hussite Wars: The Hussite Wars were fought between the followers of Jan Hus and Catholic monarchs from 1419 "
    "to about 1434. The moderate Utraquists eventually prevailed over the radical Taborites at the Battle of Lipany.",
])
QUESTION = "What year was the 2nd wife of the leader of the hussites born?"
ROLES = [
    ("decomposer", "decompose", dict(question=QUESTION), Decomposition, 80),
    ("verifier", "answer", dict(evidence=PASSAGES, question="Who was the second wife of George of Podebrady?"),
     SubAnswer, 60),
    ("assembler", "assemble", dict(facts="1. Who led the Hussites? -> George of Podebrady\n2. Who was the second wife "
                                         "of George of Podebrady? -> Joanna of Rozmital\n3. When was Joanna of "
                                         "Rozmital born? -> c. 1430", question=QUESTION), FinalAnswer, 40),
    ("retriever", "reformulate", dict(question="When was Joanna of Rozmital born?", previous="Joanna Rozmital birth",
                                      reason="no passage gives a year", hints="Queen of Bohemia"), Reformulation, 60),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a registry name or .gguf path (default: the configured one)")
    args = parser.parse_args()
    config = load_config()
    llm = load_llm(args.model or config.llm.model, config)
    start = time.perf_counter()
    llm.load()
    load = {"event": "load", "seconds": round(time.perf_counter() - start, 3),
            "warm_prefixes": llm.warm is not None}
    if llm.warm is not None:
        files = sorted(llm.warm.folder.glob("*.state")) if llm.warm.folder and llm.warm.folder.is_dir() else []
        load.update(read=llm.warm.read_count, read_seconds=round(llm.warm.load_seconds, 3),
                    state_bytes=[f.stat().st_size for f in files])
    print(json.dumps(load), flush=True)
    try:
        for role, prompt, values, schema, max_tokens in ROLES:
            llm.forget_prompts()
            call = llm.chat_raw(render_messages(PROMPTS, prompt, **values),
                                json_schema=schema.model_json_schema(), max_tokens=max_tokens)
            output = hashlib.sha256(json.dumps([call.raw, call.token_logprobs]).encode()).hexdigest()[:12]
            print(json.dumps({"event": "call", "role": role, "prompt_tokens": call.prompt_tokens,
                              "reused": call.cached_tokens, "evaluated": llm._llama.last_evaluated,
                              "seconds": round(call.seconds, 2), "output": output, "raw": call.raw}), flush=True)
    finally:
        llm.close()


if __name__ == "__main__":
    main()
