#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

fn line(i: usize) -> Vec<u8> {
    format!("{{\"seq\":{i},\"pad\":\"{}\"}}\n", "x".repeat(100)).into_bytes()
}

fn seqs(batch: &Batch) -> Vec<usize> {
    batch
        .lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_slice(l).unwrap();
            v["seq"].as_u64().unwrap() as usize
        })
        .collect()
}

#[test]
fn lines_come_out_in_order_across_segments_and_a_restart_goes_on_from_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), 1 << 30).unwrap();
    let mut w = SpoolWriter::new(spool.clone()).unwrap();
    // About 120 bytes a line, flushed every 1,000 lines: several 1 MiB segments.
    for i in 0..30_000 {
        w.push(&line(i));
        if i % 1000 == 999 {
            w.flush();
        }
    }
    assert!(spool.segments().unwrap().len() >= 3);
    let mut r = SpoolReader::new(spool.clone());
    let mut got = Vec::new();
    for _ in 0..10 {
        let b = r.read(700).unwrap();
        got.extend(seqs(&b));
        r.commit(b.end).unwrap();
    }
    // A restart: a new reader goes on from the saved cursor; nothing is read twice or skipped.
    let mut r = SpoolReader::new(spool.clone());
    loop {
        let b = r.read(700).unwrap();
        if b.lines.is_empty() {
            break;
        }
        got.extend(seqs(&b));
        r.commit(b.end).unwrap();
    }
    assert_eq!(got, (0..30_000).collect::<Vec<_>>());
    assert_eq!(spool.segments().unwrap().len(), 1, "finished segments are deleted");
}

#[test]
fn an_unacknowledged_batch_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), 1 << 30).unwrap();
    let mut w = SpoolWriter::new(spool.clone()).unwrap();
    for i in 0..10 {
        w.push(&line(i));
    }
    w.flush();
    let mut r = SpoolReader::new(spool);
    let first = r.read(4).unwrap();
    assert_eq!(seqs(&first), [0, 1, 2, 3]);
    assert_eq!(seqs(&r.read(4).unwrap()), [0, 1, 2, 3], "not committed: the same again");
    r.commit(first.end).unwrap();
    assert_eq!(seqs(&r.read(100).unwrap()), [4, 5, 6, 7, 8, 9]);
}

#[test]
fn a_line_cut_by_a_kill_is_skipped_and_a_new_run_writes_a_new_segment() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), 1 << 30).unwrap();
    let mut w = SpoolWriter::new(spool.clone()).unwrap();
    w.push(&line(0));
    w.push(&line(1)[..20]);
    w.flush();
    drop(w);
    let mut w = SpoolWriter::new(spool.clone()).unwrap();
    w.push(&line(2));
    w.flush();
    let mut r = SpoolReader::new(spool);
    let b = r.read(10).unwrap();
    assert_eq!(seqs(&b), [0]);
    r.commit(b.end).unwrap();
    assert_eq!(seqs(&r.read(10).unwrap()), [2]);
}

#[test]
fn over_its_bound_the_oldest_segments_go_and_the_reader_goes_on_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(dir.path(), 3 << 20).unwrap();
    let mut w = SpoolWriter::new(spool.clone()).unwrap();
    for i in 0..60_000 {
        w.push(&line(i));
        if i % 1000 == 999 {
            w.flush();
        }
    }
    assert!(
        spool.backlog() <= (3 << 20) + (1 << 20) + 200_000,
        "{}",
        spool.backlog()
    );
    assert!(spool.dropped_bytes() > 0);
    let mut r = SpoolReader::new(spool);
    let b = r.read(1).unwrap();
    assert!(seqs(&b)[0] > 20_000, "starts after what was dropped: {:?}", seqs(&b));
}
