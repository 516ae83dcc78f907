"""Partitioned-communication model: the thesis's worked example, tables, bench comparison."""
import numpy as np
import pytest

from minitrace import MinitraceError
from minitrace.analysis import partitioned_model as pm
from minitrace.storage import write_bench


def test_worked_example_exactly():
    t = pm.LinkTable.constant(5e-6, 10_000 * pm.MB)
    m = pm.model(4, 16 * pm.MB, 100_000e-6, 1_000e-6, t)
    assert m["t_last"] == pytest.approx(101_121.87e-6, abs=0.01e-6)
    d = pm.display(pm.model_frame([4], [16 * pm.MB], 0.1, 0.001, t)).iloc[0]
    assert d.t_last_us == 101_121.87            # the thesis prints it truncated: 101,121
    assert d.t_single_us == 1_605
    assert d.bw_single_MBps == 9_969
    assert d.t_partition_us == 405
    assert d.hidden == 3
    assert d.t_extra_us == 405
    assert d.bw_effective_MBps == 39_506


def test_one_thread_waits_for_mu_exactly():
    """The expected maximum of one thread is its mean (EMMA would say mu + 0.18 sigma)."""
    t = pm.LinkTable.constant(5e-6, 10_000 * pm.MB)
    m = pm.model(1, 16 * pm.MB, 0.1, 0.01, t)
    assert m["t_last"] == 0.1 and m["hidden"] == 0 and m["t_extra"] == m["t_single"]


def test_no_variability_hides_nothing():
    t = pm.LinkTable.constant(5e-6, 10_000 * pm.MB)
    m = pm.model(4, 16 * pm.MB, 0.1, 0.0, t)
    assert m["hidden"] == 0 and m["t_extra"] == pytest.approx(4 * 405e-6)
    # a window shorter than one partition hides nothing either; a huge one hides T - 1
    assert pm.model(4, 16 * pm.MB, 0.1, 1e-5, t)["hidden"] == 0
    assert pm.model(8, 16 * pm.MB, 0.1, 0.05, t)["hidden"] == 7


def test_shipped_tables_are_labelled_and_load():
    for name in pm.SHIPPED_TABLES:
        tab = pm.load_table(name)
        assert len(tab.size) == 23 and tab.size[0] == 1
        # exact at a row, interpolated between rows
        i = 10
        assert tab.message_time(tab.size[i]) == pytest.approx(
            tab.latency[i] + tab.size[i] / tab.bandwidth[i])
        assert tab.message_time(tab.size[i]) < tab.message_time(1.5 * tab.size[i]) < \
            tab.message_time(tab.size[i + 1])
    from importlib import resources
    text = (resources.files("minitrace") / "data" / "lassen.csv").read_text()
    assert "NOT the numbers of the thesis" in text


def test_table_from_pt2pt_reproduces_measured_one_way_times(tmp_path):
    sizes = np.array([0, 1024, 65536, 1 << 20] * 3)
    one_way = 2e-6 + sizes / 5e9
    p = tmp_path / "pt.h5"
    write_bench(str(p), "pt2pt", {"kind": np.array(["pingpong"] * len(sizes)),
                                  "size": sizes, "t_roundtrip": 2 * one_way})
    tab = pm.load_table(str(p))
    assert tab.latency[0] == pytest.approx(2e-6)
    for s in (1024, 65536, 1 << 20):
        assert tab.message_time(s) == pytest.approx(2e-6 + s / 5e9)


def test_bad_tables_name_the_file(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("size,lat\n1,2\n")
    with pytest.raises(MinitraceError, match="bad.csv"):
        pm.load_table(str(bad))
    with pytest.raises(MinitraceError, match="no such table"):
        pm.load_table("summit")


def test_compare_bench(tmp_path):
    p = tmp_path / "part.h5"
    rows = [(mode, s, 4, r) for mode in ("partitioned", "baseline") for s in (1e6, 16e6)
            for r in range(3)]
    write_bench(str(p), "partitioned", {
        "mode": np.array([r[0] for r in rows]), "size": np.array([int(r[1]) for r in rows]),
        "threads": np.array([r[2] for r in rows]), "run": np.array([r[3] for r in rows]),
        "mu": np.full(len(rows), 0.1), "v": np.full(len(rows), 0.1),
        "t_last": np.full(len(rows), 0.101), "t_done": np.full(len(rows), 0.102),
        "bandwidth": np.full(len(rows), 5e9)}, attrs={"emulated": True})
    df = pm.compare_bench(str(p), pm.LinkTable.constant(5e-6, 10_000 * pm.MB))
    assert len(df) == 4 and (df.runs == 3).all()
    big = df[(df["size"] == 16_000_000)].set_index("mode")
    assert big.model_bw["partitioned"] == pytest.approx(16e6 / 405e-6)
    assert big.model_bw["baseline"] == pytest.approx(16e6 / 1605e-6)
    assert big.model_hidden["partitioned"] == 3


def _last_row(capsys, *args):
    from minitrace import cli
    assert cli.main(["partitioned-model", *args]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_cli_takes_simgrid_units_like_replay(capsys):
    """The worked example's row, whatever the spelling: SimGrid units (as `replay` reads them)
    or the old bare numbers (us, MB/s, bytes)."""
    row = _last_row(capsys)
    assert row.split() == ["4", "16.0", "100000.00", "1000.00", "101121.87", "1605.00", "405.00",
                           "2243.74", "405.00", "3", "9969", "39506", "3.96"]
    for args in (["--bandwidth", "10GBps"], ["--bandwidth", "10000"], ["--bandwidth", "80Gbps"],
                 ["--latency", "5"], ["--latency", "5000ns"], ["--mu", "100ms", "--sigma", "1ms"],
                 ["--mu", "100000", "--sigma", "1000"], ["--size", "16000kB"],
                 ["--size", "16000000"], ["--size", "128Mb"]):
        assert _last_row(capsys, *args) == row, args


def test_cli_unit_errors_are_one_line(capsys):
    from minitrace import cli
    for args, msg in ((["--bandwidth", "0"], "bandwidth must be positive, got '0'"),
                      (["--bandwidth", "10Gf"], "unknown bandwidth unit 'Gf' in '10Gf'"),
                      (["--size", "16mb"], "unknown size unit 'mb' in '16mb'"),
                      (["--mu", "fast"], "cannot read time 'fast': expected a number with a "
                                         "unit (s, ms, us, ns)")):
        assert cli.main(["partitioned-model", *args]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"minitrace: error: {msg}") and err.count("\n") == 1, err


def test_printed_times_reproduce_the_printed_bandwidths(capsys):
    """size / printed time, rounded, is the printed bandwidth on every row, for small and
    large messages on fast and slow links (the decimals grow as needed)."""
    from minitrace import cli
    for args in (["--table", "lassen", "--threads", "1,2,8,64", "--size", "1,1kB,64kB,16MB,1GB"],
                 ["--bandwidth", "1TBps", "--latency", "0.3us", "--size", "16MB,3kB",
                  "--threads", "4,7"]):
        assert cli.main(["partitioned-model", *args]) == 0
        lines = capsys.readouterr().out.strip().splitlines()
        head = lines[1].split()
        for line in lines[2:]:
            row = dict(zip(head, line.split()))
            size = float(row["size_MB"]) * 1e6
            for t, bw in (("t_single_us", "bw_single_MBps"), ("t_extra_us", "bw_effective_MBps")):
                assert round(size / float(row[t])) == int(row[bw]), (args, row)
            assert len(row["t_extra_us"].split(".")[1]) >= 2


def test_help_explains_v(capsys):
    from minitrace import cli
    with pytest.raises(SystemExit):
        cli.main(["partitioned-model", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "sigma = mu v^2" in text and "--mu 100ms --v 0.1 gives sigma = 1 ms" in text
    assert _last_row(capsys, "--v", "0.1") == _last_row(capsys)      # 1 ms = 1000 us
