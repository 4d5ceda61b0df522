"""Pins (issue 21, round 8 practice) for hosttune/monitor/xid.py parse_kmsg_record: a record is read from its start
("PRI,SEQ,USEC,FLAGS;MESSAGE"); a line that does not start with the header (the tail of a line cut by the reader's
bound, text of another kind) is no record, even when a kernel-looking header and an XID line follow inside it."""

from hosttune.monitor import xid

XID_LINE = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def test_only_a_header_at_the_start_makes_a_record() -> None:
    assert xid.parse_kmsg_record("4,1534,123456789,-;" + XID_LINE) == ("0000:3b:00", 79)
    assert xid.parse_kmsg_record("12,7,100,-;user text 4,1534,123456789,-;" + XID_LINE) is None
    assert xid.parse_kmsg_record("tail of a long line 4,1534,123456789,-;" + XID_LINE) is None
    assert xid.parse_kmsg_record(" 4,1534,123456789,-;" + XID_LINE) is None
    assert xid.parse_kmsg_record(XID_LINE) is None
