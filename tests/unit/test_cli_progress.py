"""The ingest's progress display (app/stichtag/cli/progress.py; docs/cli.md, "Progress"):
plain lines every N files for a pipe or a log, one line rewritten in place for a person at
a terminal. A clock the test moves stands in for time."""

from __future__ import annotations

import io

from stichtag.cli.progress import Progress, clock_text, size


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_pipe_gets_a_line_every_n_files_the_last_and_one_after_a_quiet_spell() -> None:
    out, clock = io.StringIO(), Clock()
    bar = Progress(7, enabled=True, total_bytes=7000, every=3, stream=out, clock=clock)
    for i in range(1, 8):
        clock.now += 60 if i == 5 else 1  # file 5 takes a minute: reported though not 3rd
        bar.step(f"doc{i}", 1000)
    bar.close()
    lines = out.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        "ingest 3/7 files", "ingest 5/7 files", "ingest 6/7 files", "ingest 7/7 files"]
    assert lines[0] == "ingest 3/7 files · 3.0 kB of 7.0 kB · 0:03 · 1.0 files/s, 1.0 kB/s · doc3"
    assert lines[-1].endswith("· 1:06 · 0.1 files/s, 106 B/s · doc7")
    assert "\r" not in out.getvalue()


def test_a_terminal_gets_one_line_rewritten_in_place_and_ended_on_close() -> None:
    out, clock = Terminal(), Clock()
    bar = Progress(3, enabled=True, stream=out, clock=clock, width=100)
    clock.now += 1
    bar.step("a-long-document-name", 2_500_000)
    clock.now += 0.01  # sooner than a redraw: not drawn, still counted
    bar.step("b", 10)
    clock.now += 1
    bar.step("c", 10)
    assert "\n" not in out.getvalue()
    frames = out.getvalue().split("\r")[1:]
    assert len(frames) == 2
    assert frames[1].startswith("ingest 3/3 files · 2.5 MB · 0:02")
    # padded over the longer line before it, so nothing of it is left on screen
    assert len(frames[1]) >= len(frames[0])
    bar.close()
    assert out.getvalue().endswith("\n")


def test_the_terminal_line_never_wraps() -> None:
    out, clock = Terminal(), Clock()
    bar = Progress(1, enabled=True, stream=out, clock=clock, width=40)
    clock.now += 1
    label = "a-document-with-a-very-long-name 2016-01-01"
    bar.step(label, 10)
    [frame] = out.getvalue().split("\r")[1:]
    assert len(frame) == 39 and frame == bar.line(label)[:39]
    assert frame.startswith("ingest 1/1 files · 10 B · 0:01 · ")


def test_disabled_says_nothing_but_counts() -> None:
    out = Terminal()
    bar = Progress(2, enabled=False, stream=out)
    bar.step("a", 5)
    bar.step("b", 5)
    bar.close()
    assert out.getvalue() == "" and (bar.done, bar.bytes) == (2, 10)


def test_units() -> None:
    assert [size(n) for n in (0, 999, 1000, 2_345_678, 7e12)] == [
        "0 B", "999 B", "1.0 kB", "2.3 MB", "7000.0 GB"]
    assert [clock_text(s) for s in (0, 59.9, 61, 3600, 7322)] == [
        "0:00", "0:59", "1:01", "1:00:00", "2:02:02"]
