"""CPU time of processes, from Linux's /proc, for the benchmarks that report where a run's CPU went."""

import os

TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command (state, ppid, ...); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_seconds(pid):
    """User and system CPU seconds of one process, every thread; 0 when it is gone."""
    fields = stat_fields(pid)
    # utime and stime: the 14th and 15th fields of the line, the 12th and 13th after the command.
    return (int(fields[11]) + int(fields[12])) / TICKS if fields else 0.0


def processes():
    """The ids of every process, as strings."""
    return [entry for entry in os.listdir("/proc") if entry.isdigit()]


def machine_busy_seconds():
    """CPU seconds every core spent on anything but idling and waiting for I/O, since boot."""
    with open("/proc/stat") as stat:
        fields = [int(field) for field in stat.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICKS
