-- The keys of tenant tables, one row each: (kind, table, name, leads). A
-- tenant table is a table of schema vera with a group_id column. A key leads
-- with group_id when its first column is group_id; a foreign key also needs
-- group_id first on the side it references, so that both tables are
-- co-located by it (docs/scaling.md).
with tenant_table as (
    select c.oid, c.relname
      from pg_catalog.pg_class c
     where c.relnamespace = 'vera'::regnamespace and c.relkind in ('r', 'p')
       and exists (select from pg_catalog.pg_attribute a
                    where a.attrelid = c.oid and a.attname = 'group_id' and not a.attisdropped)
), tenant_key as (
    select case k.contype when 'p' then 'primary key' when 'u' then 'unique'
                          when 'f' then 'foreign key' else 'exclusion' end as kind,
           t.relname as table_name, k.conname as name,
           (select a.attname from pg_catalog.pg_attribute a
             where a.attrelid = k.conrelid and a.attnum = k.conkey[1]) as first_column,
           (select a.attname from pg_catalog.pg_attribute a
             where a.attrelid = k.confrelid and a.attnum = k.confkey[1]) as first_referenced_column
      from tenant_table t
      join pg_catalog.pg_constraint k on k.conrelid = t.oid
     where k.contype in ('p', 'u', 'f', 'x')
    union all
    -- unique indexes of their own (the ones behind a constraint are above); an
    -- expression in the first position has no column name, so it does not lead
    select 'unique index', t.relname, i.relname,
           (select a.attname from pg_catalog.pg_attribute a
             where a.attrelid = x.indrelid and a.attnum = x.indkey[0]),
           null
      from tenant_table t
      join pg_catalog.pg_index x on x.indrelid = t.oid
      join pg_catalog.pg_class i on i.oid = x.indexrelid
     where x.indisunique
       and not exists (select from pg_catalog.pg_constraint k
                        where k.conindid = x.indexrelid and k.conrelid = x.indrelid
                          and k.contype in ('p', 'u', 'x'))
)
select kind, table_name, name,
       coalesce(first_column = 'group_id'
                and (kind <> 'foreign key' or first_referenced_column = 'group_id'), false) as leads
  from tenant_key
 order by table_name, name;
