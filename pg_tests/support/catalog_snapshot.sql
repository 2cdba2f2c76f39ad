-- Everything about the vera schema that a migration could get wrong, as
-- (kind, name, definition) rows in a stable order. Role names appear as they
-- are (roles are cluster-wide, so both builds share them).
select kind, name, definition from (
    select 'schema' as kind, n.nspname as name,
           concat_ws(' | ', pg_get_userbyid(n.nspowner), n.nspacl::text) as definition
    from pg_namespace n where n.nspname = 'vera'
  union all
    select 'extension', e.extname, e.extversion from pg_extension e
    where e.extname in ('vector', 'pg_trgm', 'unaccent', 'btree_gin')
  union all
    select 'type', t.typname,
           concat_ws(' | ', pg_get_userbyid(t.typowner),
                     (select string_agg(enumlabel, ',' order by enumsortorder)
                        from pg_enum where enumtypid = t.oid))
    from pg_type t
    where t.typnamespace = 'vera'::regnamespace and t.typtype = 'e'
  union all
    select 'relation', c.relname,
           concat_ws(' | ', c.relkind::text, c.relpersistence::text, pg_get_userbyid(c.relowner),
                     'rls=' || c.relrowsecurity, 'force=' || c.relforcerowsecurity,
                     c.relacl::text, c.reloptions::text, obj_description(c.oid, 'pg_class'))
    from pg_class c
    where c.relnamespace = 'vera'::regnamespace and c.relkind in ('r', 'v', 'm', 'p', 'S', 'c')
  union all
    select 'column', c.relname || '.' || a.attname,
           concat_ws(' | ', a.attnum, format_type(a.atttypid, a.atttypmod), 'storage=' || a.attstorage::text,
                     case when a.attnotnull then 'not null' end,
                     nullif(a.attidentity::text, ''), nullif(a.attgenerated::text, ''),
                     pg_get_expr(d.adbin, d.adrelid), a.attacl::text,
                     col_description(c.oid, a.attnum))
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = 'vera'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'c')
      and a.attnum > 0 and not a.attisdropped
  union all
    select 'index', i.relname, pg_get_indexdef(i.oid)
    from pg_index x
    join pg_class i on i.oid = x.indexrelid
    where i.relnamespace = 'vera'::regnamespace
  union all
    select 'constraint', c.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    where c.relnamespace = 'vera'::regnamespace
  union all
    select 'function', p.oid::regprocedure::text,
           concat_ws(' | ', pg_get_userbyid(p.proowner), p.proacl::text,
                     obj_description(p.oid, 'pg_proc'), pg_get_functiondef(p.oid))
    from pg_proc p
    where p.pronamespace = 'vera'::regnamespace
  union all
    select 'policy', pol.tablename || '.' || pol.policyname,
           concat_ws(' | ', pol.permissive, pol.roles::text, pol.cmd, pol.qual, pol.with_check)
    from pg_policies pol
    where pol.schemaname = 'vera'
  union all
    select 'default_acl', pg_get_userbyid(d.defaclrole) || '.' || d.defaclobjtype::text, d.defaclacl::text
    from pg_default_acl d
  union all
    select 'trigger', c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid)
    from pg_trigger t
    join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = 'vera'::regnamespace and not t.tgisinternal
) snapshot
order by kind, name;
