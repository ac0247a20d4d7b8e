"""The rank tables every history.db of the fts5 engine has (projections.db creates them):
the champion lists, their watermark, and the documents changed since it (filled by the
triggers). A cache of documents_fts (projections.rank.champions says what each holds); the
deep lists' tables are made when first needed (projections.rank.deep.ensure).
"""

from __future__ import annotations

SCHEMA = """
CREATE TABLE rank_meta(id INTEGER PRIMARY KEY CHECK (id = 1), wm INTEGER NOT NULL,
  avgdl REAL NOT NULL);
CREATE TABLE rank_terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL, tau REAL, avgdl REAL)
  WITHOUT ROWID;  -- tau NULL: a common word whose list is still to be made
CREATE TABLE rank_champions(term TEXT NOT NULL, doc INTEGER NOT NULL, f INTEGER NOT NULL,
  dl INTEGER NOT NULL, w REAL NOT NULL, PRIMARY KEY(term, doc)) WITHOUT ROWID;
CREATE TABLE rank_dirty(doc INTEGER PRIMARY KEY);
CREATE TABLE rank_was(doc INTEGER PRIMARY KEY, body);  -- text as of wm of changed documents
"""

TRIGGERS = """
CREATE TRIGGER rank_dirty_au AFTER UPDATE OF body, role, kind ON document_rows BEGIN
  INSERT OR IGNORE INTO rank_dirty(doc) VALUES (old.rowid);
  INSERT OR IGNORE INTO rank_was(doc, body) SELECT old.rowid, old.body
    WHERE old.rowid <= (SELECT wm FROM rank_meta WHERE id = 1);
END;
CREATE TRIGGER rank_dirty_ad AFTER DELETE ON document_rows BEGIN
  INSERT OR IGNORE INTO rank_dirty(doc) VALUES (old.rowid);
  INSERT OR IGNORE INTO rank_was(doc, body) SELECT old.rowid, old.body
    WHERE old.rowid <= (SELECT wm FROM rank_meta WHERE id = 1);
END;
"""
