-- Match confidence (issue 28): how likely a hit answers its query, as an
-- absolute probability that means the same across queries and groups. It is
-- read from two measures of the hit alone, never from the other candidates:
-- its lexical match (BM25 against the searched groups' statistics, over the
-- query's IDF mass) and its cosine similarity to the query embedding; each
-- enters a logistic model whose coefficients were fitted offline on
-- labelled question/passage pairs and on questions asked of another
-- dataset's corpus (benchmarks/confidence.py, figures in docs/quality.md,
-- "Confidence (issue 28)"). The blend uses it as its relevance signal, so
-- that an unrelated write cannot change the order of two hits, and a result
-- whose best hit is below the threshold says it has no good match.
set role vera_owner;

-- Contract: the coefficients of the match model, one set per kind of
-- search: "hybrid" (the query's words and its vector both searched, and
-- the item has a vector), "lexical" (words only, or an item without a
-- vector), "vector" (a vector only). logit = intercept + lexical *
-- lexical_match + similarity * similarity. Fitted by
-- benchmarks/confidence.py by maximum likelihood on the best hit of each
-- search (does it answer?) of half the development questions of SciFact,
-- XQuAD en and vi and TimeQA train, each asked of its own corpus and of
-- another dataset's (where nothing answers); the hybrid set along a fixed
-- direction (similarity twice the lexical match: a small group's
-- statistics make its lexical matches unreliable), only its intercept and
-- scale fitted (Platt scaling). For the local MiniLM embedder
-- (all-MiniLM-L6-v2): a model whose similarities spread otherwise needs its
-- own fit. Figures: docs/quality.md, "Confidence (issue 28)". Feedback
-- (votes) could later refine them per group, as calibrate_weights refines
-- the blend's weights; today every group uses these.
create or replace function vera.match_calibration()
returns jsonb
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select '{"hybrid": {"intercept": -6.66, "lexical": 4.04, "similarity": 8.09},
             "lexical": {"intercept": -5.62, "lexical": 9.91, "similarity": 0.0},
             "vector": {"intercept": -5.0, "lexical": 0.0, "similarity": 7.96}}'::jsonb
$$;
comment on function vera.match_calibration() is
    'Coefficients of the match model (logistic, per kind of search), fitted by benchmarks/confidence.py';
grant execute on function vera.match_calibration() to vera_app, vera_worker, vera_gateway;

-- Contract: the match confidence from which a hit counts as a good match
-- (search's good_match; the clients' no_good_match when the best hit is
-- below it): 0.5, where the model finds an answer as likely as not.
create or replace function vera.good_match_threshold()
returns real
language sql immutable parallel safe
as $$ select 0.5::real $$;
comment on function vera.good_match_threshold() is
    'Match confidence from which a hit is a good match (0.5)';
grant execute on function vera.good_match_threshold() to vera_app, vera_worker, vera_gateway;

-- Internal: 1 / (1 + exp(-x)), null for null; clamped where exp would overflow.
create or replace function vera.logistic(x double precision)
returns double precision
language sql immutable parallel safe
as $$ select case when x is not null then 1 / (1 + exp(-greatest(least(x, 50), -50))) end $$;
comment on function vera.logistic(double precision) is 'Internal: the logistic function 1 / (1 + exp(-x))';
-- vera.match_confidence, which callers may run, calls it (as they do)
grant execute on function vera.logistic(double precision) to vera_app, vera_worker, vera_gateway;

-- Internal: the match model's log-odds for an item's two measures (null
-- where a half was not searched, or the item has no vector), each half's
-- term scaled by the search's weight of that half (1 by default: a weight
-- other than 1 moves the confidence off its calibration; 0 leaves the half
-- out). Null when neither measure is there.
-- Internal: a coefficient of the match model (intercept, lexical or
-- similarity) for the kind of search an item's measures make (hybrid,
-- lexical or vector), as vera.match_logit reads it.
create or replace function vera.match_coefficient(name text, lexical_match double precision,
                                                  similarity double precision, lexical_weight double precision,
                                                  vector_weight double precision)
returns double precision
language sql immutable parallel safe
-- one expression, names qualified, no SET clause: inlined (see vera.match_logit)
as $$
    select (vera.match_calibration()
                operator(pg_catalog.->) case when lexical_weight > 0 and lexical_match is not null
                                                  and vector_weight > 0 and similarity is not null then 'hybrid'
                                             when lexical_weight > 0 and lexical_match is not null then 'lexical'
                                             else 'vector' end
                operator(pg_catalog.->>) name)::float8
$$;
comment on function vera.match_coefficient(text, double precision, double precision, double precision,
                                           double precision) is
    'Internal: a coefficient of the match model for the kind of search an item''s measures make';
grant execute on function vera.match_coefficient(text, double precision, double precision, double precision,
                                                 double precision)
    to vera_app, vera_worker, vera_gateway;

create or replace function vera.match_logit(lexical_match double precision, similarity double precision,
                                            lexical_weight double precision default 1,
                                            vector_weight double precision default 1)
returns double precision
language sql immutable parallel safe
-- One expression, every name qualified and no SET clause, so that the planner inlines it (and
-- vera.match_confidence) into search's statement: as calls, search's ~80 took 3.8 ms of a hybrid
-- search over 100,000 passages on a loaded machine (issue 31).
as $$
    select case when (lexical_weight > 0 and lexical_match is not null) or (vector_weight > 0 and similarity is not null)
                then vera.match_coefficient('intercept', lexical_match, similarity, lexical_weight, vector_weight)
                     + lexical_weight * coalesce(case when lexical_weight > 0 then lexical_match end
                                                 * vera.match_coefficient('lexical', lexical_match, similarity,
                                                                          lexical_weight, vector_weight), 0)
                     + vector_weight * coalesce(case when vector_weight > 0 then similarity end
                                                * vera.match_coefficient('similarity', lexical_match, similarity,
                                                                         lexical_weight, vector_weight), 0)
           end
$$;
comment on function vera.match_logit(double precision, double precision, double precision, double precision) is
    'Internal: log-odds of the match model for a lexical match and a similarity (null when neither)';
-- vera.match_confidence, which callers may run, calls it (as they do)
grant execute on function vera.match_logit(double precision, double precision, double precision, double precision)
    to vera_app, vera_worker, vera_gateway;

-- Contract: the match confidence in [0, 1] of a lexical match and a
-- similarity (as vera.search shows them; null for a half not measured),
-- the logistic of the match model's log-odds; 0 when neither is given.
-- What vera.search computes for each candidate; reads no tenant's rows.
create or replace function vera.match_confidence(lexical_match double precision, similarity double precision,
                                                 lexical_weight double precision default 1,
                                                 vector_weight double precision default 1)
returns real
language sql immutable parallel safe
-- No SET clause and vera.logistic written out (its argument twice, which keeps a costly argument
-- from being inlined): the planner inlines all of it, as vera.match_logit. Null log-odds (neither
-- measure) give 0.
as $$
    select case when (lexical_weight > 0 and lexical_match is not null) or (vector_weight > 0 and similarity is not null)
                then 1 / (1 + exp(-greatest(least(vera.match_logit(lexical_match, similarity, lexical_weight,
                                                                   vector_weight), 50), -50)))
                else 0 end::real
$$;
comment on function vera.match_confidence(double precision, double precision, double precision, double precision) is
    'Calibrated probability that an item answers, from its lexical match and similarity';
grant execute on function vera.match_confidence(double precision, double precision, double precision,
                                                double precision)
    to vera_app, vera_worker, vera_gateway;

-- Internal: the query's IDF mass, the BM25 score of a fact that holds each
-- of its words once: the sum of their IDFs over the searched groups'
-- statistics (stat_terms with stat_documents, term '' the corpus, both
-- kinds together), a word they never hold counting the IDF of the rarest.
-- A lexical match is a score over this mass: matching the one common word
-- of four ("recipe" of "quantum banana submarine recipe") is a small part
-- of it, matching all four about 1.
create or replace function vera.query_idf_mass(terms text[], stat_terms text[], stat_documents bigint[])
returns double precision
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    with stats as (
        select * from unnest(stat_terms, stat_documents) s(term, documents)
    ), corpus as (
        select coalesce(sum(s.documents), 0)::bigint as documents from stats s where s.term = ''
    )
    select sum(vera.bm25_idf(c.documents,
                             coalesce((select sum(s.documents) from stats s where s.term = q.term), 0)::bigint))
      from (select distinct q from unnest(terms) q where q <> '') q(term)
     cross join corpus c
$$;
comment on function vera.query_idf_mass(text[], text[], bigint[]) is
    'Internal: sum of the query terms'' BM25 IDFs over the searched statistics (an unheld term: the rarest''s)';
grant execute on function vera.query_idf_mass(text[], text[], bigint[]) to vera_searcher;

-- Internal: a BM25 score over the query's IDF mass: about 1 when the item
-- holds every word of the query once, more when it repeats them (BM25
-- saturates at k1 + 1 = 2.2 times), 0 when it holds none; null when the
-- mass is null (the words were not searched).
create or replace function vera.lexical_match(score double precision, idf_mass double precision)
returns double precision
language sql immutable parallel safe
as $$ select case when idf_mass > 0 then coalesce(score, 0) / idf_mass end $$;
comment on function vera.lexical_match(double precision, double precision) is
    'Internal: a BM25 score over the query''s IDF mass (about 1: every word held once)';
grant execute on function vera.lexical_match(double precision, double precision) to vera_searcher;

reset role;
