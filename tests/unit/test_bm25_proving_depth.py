"""The threshold test of bench/bm25_proving_depth.py: it proves a top k only when no document
read or unread could still overtake the k-th best."""

from bench.bm25_proving_depth import proves

IDF = {"retry": 2.0, "delay": 1.0}


def test_a_clear_winner_is_proved_after_one_posting_of_each_term():
    postings = {
        "retry": [("a", 5.0), ("b", 1.0), ("c", 0.5)],
        "delay": [("a", 4.0), ("c", 1.0), ("b", 0.5)],
    }
    # a: 14 read; anything else at most 2 * 1.0 + 1.0 = 3
    assert proves(postings, IDF, k=1, depth=1)


def test_a_document_read_in_one_term_may_still_overtake():
    postings = {
        "retry": [("a", 3.0), ("b", 2.9), ("c", 0.1)],
        "delay": [("c", 5.0), ("b", 4.9), ("a", 0.1)],
    }
    # after one posting each: a 6.0, c 5.0; b unread could reach 2 * 2.9 + 4.9 = 10.7
    assert not proves(postings, IDF, k=1, depth=1)
    # after two: b 5.8 + 4.9 = 10.7 leads, a can reach 6.0 + 0.1, c 5.0 + 0.2
    assert proves(postings, IDF, k=1, depth=2)


def test_fewer_documents_than_k_are_proved_only_when_every_posting_was_read():
    postings = {"retry": [("a", 1.0), ("b", 0.5)], "delay": [("a", 1.0)]}
    assert not proves(postings, IDF, k=3, depth=1)
    assert proves(postings, IDF, k=3, depth=2)
