-- Term statistics of the lexical half (BM25, see sql/functions/165_term_stats.sql):
-- per group and kind (facts, passages), how many documents hold each term
-- and how long the documents are. Only the definer functions read and write
-- them (vera_owner through its policy, vera_searcher past RLS); a tenant's
-- scores come from the statistics of exactly the groups it searches.
set role vera_owner;

-- The counts of committed writes. The term '' (never a lexeme) stands for
-- the corpus: its documents are all the group's counted documents, its
-- tokens their summed length (a document's length: its distinct words). For
-- a real term, documents is its document frequency and tokens its
-- occurrences.
create table vera.term_stats (
    group_id  text not null references vera.groups (group_id),
    kind      vera.item_kind not null,
    term      text not null,
    documents bigint not null,
    tokens    bigint not null,
    primary key (group_id, kind, term)
);
comment on table vera.term_stats is 'BM25 statistics per group, kind and term (term '''' is the corpus)';

-- A transaction's changes until it commits: each statement that adds or
-- removes documents appends its net change per (group, kind, term) here, and
-- at commit one deferred trigger applies them all to term_stats in one
-- sorted statement and deletes them. Rows never outlive their transaction
-- (unlogged: a crash loses only transactions that never committed), so the
-- only rows anyone sees here are its own transaction's.
create unlogged table vera.term_stat_changes (
    group_id    text not null,
    change_id   bigint generated always as identity,
    transaction xid8 not null default pg_current_xact_id(),
    kind        vera.item_kind not null,
    term        text not null,
    documents   bigint not null,
    tokens      bigint not null,
    primary key (group_id, change_id)
);
create index term_stat_changes_transaction_idx on vera.term_stat_changes (transaction);
create index term_stat_changes_term_idx on vera.term_stat_changes (group_id, kind, term);
comment on table vera.term_stat_changes is 'BM25 statistics: the net changes of open transactions, applied at their commit';

-- One row per open transaction with changes: its deferred trigger applies them.
create unlogged table vera.term_stat_transactions (
    transaction xid8 primary key default pg_current_xact_id()
);
comment on table vera.term_stat_transactions is 'BM25 statistics: open transactions whose changes apply at commit';

-- A snapshot ranks its copies with the statistics its group had when it was taken.
create table vera.snapshot_term_stats (
    group_id    text not null,
    snapshot_id uuid not null,
    kind        vera.item_kind not null,
    term        text not null,
    documents   bigint not null,
    tokens      bigint not null,
    primary key (group_id, snapshot_id, kind, term),
    foreign key (group_id, snapshot_id) references vera.snapshots (group_id, snapshot_id) on delete cascade
);
comment on table vera.snapshot_term_stats is 'BM25 statistics of a snapshot''s group when it was taken';

reset role;
