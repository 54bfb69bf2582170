"""The table and the checks of benchmarks/serve.py's load run (its figures: see
`benchmarks.common.serving_load` and serve.py's ``_load_run``)."""


def timing_checks(found):
    """The load run's checks of how long things took, failed, in words (empty: all passed):
    no second without an answer, overload answered within a second, clients first served
    (cold start) and served again after the burst within two deadlines."""
    failed = []
    deadline = found["deadline_ms"] / 1000
    for i, r in enumerate(found["rounds"], 1):
        if r["longest_gap_s"] > 1.0:
            failed.append(f"round {i}: {r['longest_gap_s']:.2f} s without an answer")
    first = found.get("cold_start_first_answer_s")
    if first is not None and first > 2 * deadline:
        failed.append(f"cold start: clients first answered after {first:.2f} s")
    burst = found.get("burst", {})
    slowest = burst.get("slowest_overload_answer_s")
    if slowest is not None and slowest > 1.0:
        failed.append(f"burst: an overload answer took {slowest:.2f} s")
    again = burst.get("served_again_after_s")
    if again is not None and again > 2 * deadline:
        failed.append(f"burst: served again after {again:.2f} s")
    return failed


def checks(found):
    """The load run's other acceptance checks, failed, in words (empty: all passed): no
    failed request, each new version answers, clients are served at all (cold start, after
    the burst), hostile requests refused clearly, memory bounds, every simultaneous
    connection answered, the server exits cleanly."""
    failed = []
    for i, r in enumerate(found["rounds"], 1):
        if r["failed"]:
            failed.append(f"round {i}: {r['failed']} failed requests {r['failure_codes']}")
        if r["swap_to_new_version_s"] is None:
            failed.append(f"round {i}: version {r['version']} never answered")
    if found.get("cold_start_first_answer_s") is None:
        failed.append("cold start: clients were never answered")
    if found.get("burst", {}).get("served_again_after_s") is None:
        failed.append("burst: clients were not served again after it")
    unclear = [h["request"] for h in found.get("hostile", []) if not h["clear"]]
    if unclear:
        failed.append(f"hostile requests not refused clearly: {unclear}")
    peak = found["rounds"][0].get("hostile_peak_pss_mb") if found["rounds"] else None
    if peak is not None and peak >= 2 * found["idle_pss_mb"]:
        failed.append(f"memory peaked at {peak:.0f} MB under hostile requests (idle "
                      f"{found['idle_pss_mb']:.0f} MB)")
    if len(found["rounds"]) > 1:
        one, two = found["rounds"][0]["end_pss_mb"], found["rounds"][-1]["end_pss_mb"]
        if abs(two - one) > 0.05 * one:
            failed.append(f"memory after the last round {two:.0f} MB, after the first "
                          f"{one:.0f} MB: more than 5% apart")
    connections = found.get("connections", {})
    if connections.get("answered") != connections.get("clients"):
        failed.append(f"simultaneous connections: {connections}")
    if found.get("server_exit") != 0:
        failed.append(f"the server exited with {found.get('server_exit')}")
    return failed


def print_load(found):
    """The load run's tables."""
    flags = ("default server flags" if found.get("read_timeout_ms", 5000) == 5000 else
             f"default server flags but --rest_api_read_timeout_in_ms={found['read_timeout_ms']}")
    print(f"Load run: {flags}, {found['deadline_ms']} ms deadlines, a version "
          "swap half-way through each round; memory: the server's RSS / PSS of it and its "
          "version processes, MB")
    print("| round | requests | failed | overload | p50 ms | p99 ms | longest gap s | "
          "gap after swap s | new version after s | memory start | memory end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(found["rounds"], 1):
        swap = r["swap_to_new_version_s"]
        print(f"| {i} | {r['requests']} | {r['failed']} | {r['overload']} | "
              f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['longest_gap_s']:.2f} | "
              f"{r['longest_gap_after_swap_s']:.2f} | "
              f"{'-' if swap is None else f'{swap:.2f}'} | "
              f"{r['start_rss_mb']:.0f} / {r['start_pss_mb']:.0f} | "
              f"{r['end_rss_mb']:.0f} / {r['end_pss_mb']:.0f} |")
    first = found.get("cold_start_first_answer_s")
    print(f"cold start: {found.get('idle_rss_mb', 0):.0f} / {found.get('idle_pss_mb', 0):.0f} "
          f"MB idle; the slowest of the first answers: "
          f"{'none' if first is None else f'{first:.2f} s'}")
    burst = found.get("burst")
    if burst:
        slowest = burst["slowest_overload_answer_s"]
        print(f"burst of {burst['requests']} requests at once: {burst['answers']}; slowest "
              f"overload answer {'-' if slowest is None else f'{slowest:.2f} s'}; served "
              f"again after {burst['served_again_after_s']} s")
    connections = found.get("connections")
    if connections:
        print(f"{connections['clients']} connections at once: {connections['answered']} "
              f"answered {connections['errors'] or ''}")
    if found.get("hostile"):
        peak = found["rounds"][0].get("hostile_peak_pss_mb", 0)
        print(f"hostile requests during round 1 (memory peak {peak:.0f} MB, idle "
              f"{found['idle_pss_mb']:.0f} MB):")
        print("| request | answer | seconds | clear |")
        print("|---|---|---|---|")
        for h in found["hostile"]:
            answer = h["answer"].replace("|", "/")[:100]
            print(f"| {h['request']} | {answer} | {h['seconds']:.2f} | "
                  f"{'yes' if h['clear'] else 'NO'} |")
    for failure in found["failed_checks"]:
        print(f"FAILED CHECK {failure}")
    for slow in found.get("timing_checks_not_enforced", []):
        print(f"failed timing check, not enforced (--notiming_checks): {slow}")
