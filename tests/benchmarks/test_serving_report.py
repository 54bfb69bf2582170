"""benchmarks/common/serving_report.py: which of the load run's checks fail, split into the
checks of how long things took (`timing_checks`, which a small run may leave unenforced) and
the others (`checks`)."""

import copy

from benchmarks.common import serving_report


def _round(**changes):
    figures = {"requests": 100, "failed": 0, "overload": 0, "failure_codes": {},
               "p50_ms": 5.0, "p99_ms": 20.0, "longest_gap_s": 0.2, "version": 2,
               "start_rss_mb": 700.0, "start_pss_mb": 1000.0, "swap_to_new_version_s": 2.0,
               "longest_gap_after_swap_s": 0.2, "end_rss_mb": 710.0, "end_pss_mb": 1010.0,
               "hostile_peak_pss_mb": 1200.0}
    figures.update(changes)
    return figures


PASSED = {"rounds": [_round()], "deadline_ms": 1000, "read_timeout_ms": 5000,
          "cold_start_first_answer_s": 0.5, "idle_rss_mb": 700.0, "idle_pss_mb": 1000.0,
          "hostile": [{"request": "REST 10,000 texts", "answer": "400 ...", "seconds": 0.0,
                       "clear": True}],
          "burst": {"requests": 40, "answers": {"OK": 40}, "slowest_overload_answer_s": None,
                    "served_again_after_s": 0.01},
          "connections": {"clients": 8, "answered": 8, "errors": []}, "server_exit": 0}


def _found(**changes):
    found = copy.deepcopy(PASSED)
    found.update(changes)
    return found


def test_a_run_that_passed_fails_no_check():
    assert serving_report.checks(PASSED) == []
    assert serving_report.timing_checks(PASSED) == []


def test_slow_answers_fail_only_the_timing_checks():
    found = _found(rounds=[_round(longest_gap_s=1.8)], cold_start_first_answer_s=2.5,
                   burst={"requests": 40, "answers": {"OK": 30, "UNAVAILABLE": 10},
                          "slowest_overload_answer_s": 1.4, "served_again_after_s": 3.0})
    assert serving_report.checks(found) == []
    assert serving_report.timing_checks(found) == [
        "round 1: 1.80 s without an answer", "cold start: clients first answered after 2.50 s",
        "burst: an overload answer took 1.40 s", "burst: served again after 3.00 s"]


def test_failures_that_are_not_about_time_fail_the_other_checks():
    found = _found(rounds=[_round(failed=3, failure_codes={"INTERNAL": 3},
                                  swap_to_new_version_s=None)],
                   cold_start_first_answer_s=None,
                   burst={"requests": 40, "answers": {"OK": 40},
                          "slowest_overload_answer_s": None, "served_again_after_s": None},
                   hostile=[{"request": "REST chunk size zz", "answer": "500", "seconds": 0.0,
                             "clear": False}],
                   connections={"clients": 8, "answered": 7, "errors": ["reset"]},
                   server_exit=1)
    failed = serving_report.checks(found)
    assert failed[:4] == ["round 1: 3 failed requests {'INTERNAL': 3}",
                          "round 1: version 2 never answered",
                          "cold start: clients were never answered",
                          "burst: clients were not served again after it"]
    assert failed[4] == "hostile requests not refused clearly: ['REST chunk size zz']"
    assert failed[5].startswith("simultaneous connections: ")
    assert failed[6] == "the server exited with 1"
    assert serving_report.timing_checks(found) == []


def test_memory_bounds():
    found = _found(rounds=[_round(hostile_peak_pss_mb=2100.0), _round(end_pss_mb=1100.0)])
    assert serving_report.checks(found) == [
        "memory peaked at 2100 MB under hostile requests (idle 1000 MB)",
        "memory after the last round 1100 MB, after the first 1010 MB: more than 5% apart"]
