"""`reagent doctor`: this installation's versions, CPU, settings, models, indexes and load probe."""

from __future__ import annotations

import sys

import click

from .common import config_from, echo_json


def _speed(attempt: dict) -> str:
    """', prompt 130 tok/s, generation 22 tok/s, a typical call 6.0 s' when the probe timed the setting."""
    if not attempt.get("prefill_tps") or not attempt.get("decode_tps"):
        return ""
    typical = f", a typical call {attempt['typical_call_s']:.1f} s" if attempt.get("typical_call_s") else ""
    return f", prompt {attempt['prefill_tps']:.0f} tok/s, generation {attempt['decode_tps']:.0f} tok/s{typical}"


def _line(label: str, text: str) -> None:
    click.echo(f"{label:<14}{text}")


def _warm_line(warm: dict) -> str:
    """Whether role prefixes start warm, and what the cache holds (one store per model, build, CPU and threads)."""
    if not warm["on"]:
        return f"role prefixes start cold ({warm['off_because']})"
    stored = warm["stored"]
    if not stored:
        return f"role prefixes kept in {warm['folder']}: none yet (each role's first call takes its own)"
    states = sum(s["states"] for s in stored)
    size = sum(s["bytes"] for s in stored) / 2**20
    each = "; ".join(f"{s['model']}, {s['threads']} thread{'' if s['threads'] == 1 else 's'}"
                     f"{', extra buffers off' if s['extra_buffers'] is False else ''}"
                     f"{', blocks ' + str(s['prefill_block']) if s.get('prefill_block') else ''}: {s['states']} states"
                     for s in stored[:3])
    more = f"; and {len(stored) - 3} more" if len(stored) > 3 else ""
    return f"role prefixes kept in {warm['folder']}: {states} states, {size:.0f} MiB ({each}{more})"


def _render(data: dict) -> None:
    py, pk, ll, cpu, llm, home = (data[k] for k in ("python", "packages", "llama_cpp", "cpu", "llm", "home"))
    _line("python", f"{py['version']} ({py['executable']}) on {py['platform']}")
    _line("packages", ", ".join(f"{name} {version or 'missing'}" for name, version in pk.items()))
    _line("llama.cpp", f"llama-cpp-python {ll['version'] or 'not importable'}; gpu offload "
          f"{'yes' if ll['gpu_offload'] else 'no'}")
    _line("", ll["system_info"] or "")
    _line("cpu", f"{cpu['model']} ({cpu['machine']}), {cpu['usable_cores']} usable cores; "
          f"{' '.join(cpu['features']) or 'no flags read'}; AMX {'yes' if cpu['amx'] else 'no'}")
    _line("llm", f"model {llm['model']}, {llm['threads']} threads, extra buffers "
          f"{'on' if llm['extra_buffers'] else 'off'} (setting {llm['extra_buffers_setting']!r})")
    if "openmp_wait" in llm:
        shared = llm["model_processes"]
        _line("cores", f"{'a fair share per call' if llm['threads_shared'] else 'fixed threads'}; "
              f"{shared['members']} model processes on this machine ({shared['active']} busy); "
              f"OpenMP waits: {llm['openmp_wait']}")
    warm = data.get("warm")
    if warm:
        _line("warm", _warm_line(warm))
    _line("home", f"{home['path']} ({home['free_bytes'] / 2**30:.1f} GiB free"
          f"{'' if home['writable'] else ', NOT writable'})")
    folder = data.get("models_folder")
    if folder:
        _line("models from", f"{folder['path']} (set by {folder['origin']})"
              + ("" if folder["exists"] else ", not created yet") + (", read-only" if folder.get("writable") is False else ""))
        emb = folder["embedder"]
        _line("embedder", f"{emb['name']} on {emb['backend']}: weights from {emb['package'] or 'a package not installed'}"
              + (f"; ONNX export in {emb['onnx_export']}" if emb["onnx_export"] else ""))
    for row in data["models"]:
        _line("model", f"{row['name']:<22} {row['state']:<9} {row['path']}")
    for row in data["indexes"] or [{"name": "(none built)", "passages": ""}]:
        passages = f"{row['passages']} passages  " if row.get("passages") is not None else ""
        _line("index", f"{row['name']:<30} {passages}{row.get('state', '')}".rstrip())
    probe = data["probe"]
    if probe is None:
        _line("probe", "not run (no default model, llama.cpp missing, or --no-probe)")
    elif probe.get("error"):
        _line("probe", f"FAILED: {probe['error']}")
    else:
        timed = [a for a in probe["attempts"] if _speed(a)]
        how = ("remembered" + ("; timed then: " if timed else "") +
               "; ".join(f"{'on' if a['extra_buffers'] else 'off'}{_speed(a)}" for a in timed)
               if probe["remembered"] else
               "; ".join(f"extra buffers {'on' if a['extra_buffers'] else 'off'}: {a['signal'] or a['outcome']} "
                         f"in {a['seconds']:.1f} s{_speed(a)}" for a in probe["attempts"]))
        _line("probe", f"{'ok' if probe['ok'] else 'FAILED'}: {probe['model']} loads with extra buffers "
              f"{'on' if probe['extra_buffers'] else 'off'} ({how})")
    if data["ok"]:
        click.echo("no problems found")
    for problem in data["problems"]:
        click.secho(f"PROBLEM: {problem['what']}  ->  {problem['fix']}", fg="red")


@click.command(name="doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (for bug reports).")
@click.option("--no-probe", is_flag=True, help="Skip the load probe of the default model.")
@click.option("--reprobe", is_flag=True, help="Probe the default model again even if a verdict is remembered.")
@click.option("--model", default=None, help="Model to probe instead of the configured default.")
def doctor(as_json: bool, no_probe: bool, reprobe: bool, model: str | None) -> None:
    """Check this installation: versions, CPU, llama.cpp settings, models, indexes, a load probe.

    Exits with status 1 when something is wrong; each problem names its fix.
    """
    from .diagnose import diagnose

    report = diagnose(config_from(llm__model=model), probe=not no_probe, reprobe=reprobe)
    data = report.to_json()
    if as_json:
        echo_json(data)
    else:
        _render(data)
    sys.exit(0 if report.ok else 1)
