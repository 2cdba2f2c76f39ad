-- What the language-model workers decided, so that no model is asked twice
-- for the same thing (sql/functions/240_extraction.sql reads and writes these;
-- no login role touches the tables).
--
-- extraction_runs: the validated claims a model version extracted from one
-- passage text (by content hash, per group). Re-ingesting unchanged text, or
-- the same paragraph in a new version of a file, reuses them without a model
-- call. Only what the worker validated is stored (spans checked against the
-- text, fields known, at most max_claims_per_passage), never the raw answer.
-- chunk_extractions: which passages were extracted by which model version.
-- judge_verdicts: a judge's verdict on one set of inputs (their hash), with
-- the model and prompt version that gave it; a replayed job reuses it.
set role vera_owner;

create table vera.extraction_runs (
    group_id       text not null references vera.groups (group_id),
    content_sha256 bytea not null constraint extraction_runs_sha256_length check (octet_length(content_sha256) = 32),
    -- the extraction model and the prompt version, e.g. gpt-4o-mini/extract-1
    model_version  text not null
                   constraint extraction_runs_model_version_length check (char_length(model_version) between 1 and 300),
    outcome        text not null constraint extraction_runs_outcome_known check (outcome in ('extracted', 'failed')),
    claims         jsonb not null default '[]'
                   constraint extraction_runs_claims_array check (jsonb_typeof(claims) = 'array'
                                                                  and jsonb_array_length(claims) <= 1000),
    -- claims the worker dropped: a span not in the text, unknown fields, past the cap
    dropped        integer not null default 0 constraint extraction_runs_dropped_nonnegative check (dropped >= 0),
    detail         text constraint extraction_runs_detail_length check (char_length(detail) <= 1000),
    created_at     timestamptz not null default now(),
    primary key (group_id, content_sha256, model_version)
);
comment on table vera.extraction_runs is
    'Validated claims a model version extracted from one passage text (by hash): reused, never asked twice';

create table vera.chunk_extractions (
    group_id       text not null,
    chunk_id       uuid not null,
    model_version  text not null
                   constraint chunk_extractions_model_version_length check (char_length(model_version) between 1 and 300),
    content_sha256 bytea not null,
    facts          integer not null default 0 constraint chunk_extractions_facts_nonnegative check (facts >= 0),
    extracted_at   timestamptz not null default now(),
    primary key (group_id, chunk_id, model_version),
    foreign key (group_id, chunk_id) references vera.chunks (group_id, chunk_id) on delete cascade
);
comment on table vera.chunk_extractions is 'Which passages each extraction model version has been through';

create table vera.judge_verdicts (
    group_id       text not null references vera.groups (group_id),
    judge          text not null constraint judge_verdicts_judge_known check (judge in ('equivalence', 'contradiction')),
    inputs_sha256  bytea not null constraint judge_verdicts_sha256_length check (octet_length(inputs_sha256) = 32),
    model          text not null constraint judge_verdicts_model_length check (char_length(model) between 1 and 200),
    prompt_version text not null
                   constraint judge_verdicts_prompt_version_length check (char_length(prompt_version) between 1 and 100),
    verdict        jsonb not null constraint judge_verdicts_verdict_object check (jsonb_typeof(verdict) = 'object'),
    decided_by     uuid,
    created_at     timestamptz not null default now(),
    primary key (group_id, judge, inputs_sha256, model, prompt_version)
);
comment on table vera.judge_verdicts is 'A judge''s verdict per inputs hash, model and prompt version: replays reuse it';

reset role;
