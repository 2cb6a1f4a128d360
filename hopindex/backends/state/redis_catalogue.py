"""Entity mentions in Redis (docs/architecture.md).

Per index: ``mdoc:<doc id>`` (hash ``source:entity`` → count, a document's
mentions), ``ment:<entity>`` (hash ``source:doc id`` → count, the same mentions
seen from the entity) and ``title`` (set of ``<byte length of entity>:<entity><doc id>``
for title mentions: the lexicon without scanning every entity). Source values
contain no ``:``, so a field splits at its first colon whatever the entity or doc
id holds.

Both mention writes are Lua scripts: the touched-entity set compares the
document's entities before and after, which must not interleave with another
writer of that document; writers of different documents only touch disjoint
fields of the shared ``ment:`` hashes.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis.client import Pipeline

from hopindex.backends.state.catalogue import replaced_sources
from hopindex.backends.state.redis_connection import CHUNK, RedisConnection, unique
from hopindex.core.models import EntityMention, MentionSource

_TITLE = MentionSource.TITLE.value

_SPLIT = """
local function split(field)
  local at = string.find(field, ':', 1, true)
  return string.sub(field, 1, at - 1), string.sub(field, at + 1)
end
local function title_member(entity, doc)
  return string.len(entity) .. ':' .. entity .. doc
end
"""

# ARGV: base, doc id, the title source value, n, n replaced sources, then
# (source, entity, count) per mention. Returns the entities the document joined or left.
_REPLACE_MENTIONS = _SPLIT + """
local base, doc, title = ARGV[1], ARGV[2], ARGV[3]
local mdoc, titles = base .. 'mdoc:' .. doc, base .. 'title'
local n = tonumber(ARGV[4])
local replaced = {}
for i = 5, 4 + n do
  replaced[ARGV[i]] = true
end
local before, after = {}, {}
for _, field in ipairs(redis.call('HKEYS', mdoc)) do
  local source, entity = split(field)
  before[entity] = true
  if replaced[source] then
    redis.call('HDEL', mdoc, field)
    redis.call('HDEL', base .. 'ment:' .. entity, source .. ':' .. doc)
    if source == title then
      redis.call('SREM', titles, title_member(entity, doc))
    end
  end
end
for i = 5 + n, #ARGV, 3 do
  local source, entity, count = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  redis.call('HSET', mdoc, source .. ':' .. entity, count)
  redis.call('HSET', base .. 'ment:' .. entity, source .. ':' .. doc, count)
  if source == title then
    redis.call('SADD', titles, title_member(entity, doc))
  end
end
for _, field in ipairs(redis.call('HKEYS', mdoc)) do
  local _, entity = split(field)
  after[entity] = true
end
local touched = {}
for entity in pairs(before) do
  if not after[entity] then table.insert(touched, entity) end
end
for entity in pairs(after) do
  if not before[entity] then table.insert(touched, entity) end
end
return touched
"""

# ARGV: base, the title source value, then doc ids. Returns every entity that lost a document.
_DELETE_MENTIONS = _SPLIT + """
local base, title = ARGV[1], ARGV[2]
local titles = base .. 'title'
local seen, touched = {}, {}
for i = 3, #ARGV do
  local doc = ARGV[i]
  local mdoc = base .. 'mdoc:' .. doc
  for _, field in ipairs(redis.call('HKEYS', mdoc)) do
    local source, entity = split(field)
    redis.call('HDEL', base .. 'ment:' .. entity, source .. ':' .. doc)
    if source == title then
      redis.call('SREM', titles, title_member(entity, doc))
    end
    if not seen[entity] then
      seen[entity] = true
      table.insert(touched, entity)
    end
  end
  redis.call('DEL', mdoc)
end
return touched
"""


def _title_pair(member: str) -> tuple[str, str]:
    """(entity, doc id) of a ``title`` set member; its length prefix counts UTF-8 bytes."""
    length, _, rest = member.partition(":")
    raw = rest.encode("utf-8")
    n = int(length)
    return raw[:n].decode("utf-8"), raw[n:].decode("utf-8")


class RedisCatalogueMixin(RedisConnection):
    def replace_mentions(self, index: str, doc_id: str, mentions: Sequence[EntityMention],
                         sources: Sequence[MentionSource]) -> set[str]:
        """Replace the document's mentions from ``sources``; return entities it joined or left.

        Only a change in an entity's set of documents is reported: a new count, or
        a mention moving from one source to another, leaves the bridge as it was.
        """
        source_values = replaced_sources(doc_id, mentions, sources)
        counts: dict[tuple[str, str], int] = {}
        for mention in mentions:
            # The same entity listed twice by one source is one mention counted twice.
            key = (mention.source.value, mention.entity)
            counts[key] = counts.get(key, 0) + mention.count
        args = [self._base(index), doc_id, _TITLE, str(len(source_values)),
                *sorted(source_values)]
        for (source, entity), count in counts.items():
            args.extend((source, entity, str(count)))
        with self._errors("replace_mentions"):
            touched = self._script(_REPLACE_MENTIONS)(args=args)
        return set(touched)

    def delete_mentions(self, index: str, doc_ids: Sequence[str]) -> set[str]:
        """Forget the documents' mentions; return every entity that lost a document."""
        script = self._script(_DELETE_MENTIONS)
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            script(args=[base, _TITLE, *chunk], client=pipe)

        replies = self._batched("delete_mentions", unique(doc_ids), add)
        return {entity for reply in replies for entity in reply}

    def mentions_of_entities(self, index: str,
                             entities: Sequence[str]) -> dict[str, list[EntityMention]]:
        """Each entity's mentions, one per (document, source); unmentioned entities are absent."""
        result: dict[str, list[EntityMention]] = {}
        for entity, fields in self._mention_hashes(index, "mentions_of_entities", "ment:",
                                                   entities):
            found = [EntityMention(entity=entity, doc_id=doc_id, source=MentionSource(source),
                                   count=int(count))
                     for source, doc_id, count in _fields(fields)]
            if found:
                result[entity] = sorted(found, key=lambda m: (m.doc_id, m.source.value))
        return result

    def mentions_of_documents(self, index: str,
                              doc_ids: Sequence[str]) -> dict[str, list[EntityMention]]:
        """Each document's mentions, one per (entity, source), sorted; documents with
        none are absent."""
        result: dict[str, list[EntityMention]] = {}
        for doc_id, fields in self._mention_hashes(index, "mentions_of_documents", "mdoc:",
                                                   doc_ids):
            found = [EntityMention(entity=entity, doc_id=doc_id, source=MentionSource(source),
                                   count=int(count))
                     for source, entity, count in _fields(fields)]
            if found:
                result[doc_id] = sorted(found, key=lambda m: (m.entity, m.source.value))
        return result

    def _mention_hashes(self, index: str, operation: str, prefix: str,
                        keys: Sequence[str]) -> list[tuple[str, dict[str, str]]]:
        """Each key's mention hash (``source:other`` → count), keys sorted and unique."""
        wanted = sorted(set(keys))
        base = self._base(index)

        def add(pipe: Pipeline, chunk: Sequence[str]) -> None:
            for key in chunk:
                pipe.hgetall(base + prefix + key)

        return list(zip(wanted, self._batched(operation, wanted, add), strict=True))

    def title_lexicon(self, index: str) -> dict[str, list[str]]:
        """Title entity → the documents it is the title of (sorted)."""
        with self._errors("title_lexicon"):
            members = list(self._redis().sscan_iter(self._base(index) + "title", count=CHUNK))
        lexicon: dict[str, list[str]] = {}
        # SSCAN may repeat a member when the set is rehashed mid-scan: dedupe first.
        for entity, doc_id in sorted({_title_pair(m) for m in members}):
            lexicon.setdefault(entity, []).append(doc_id)
        return lexicon


def _fields(fields: dict[str, str]) -> list[tuple[str, str, str]]:
    """A mention hash's fields ``source:other`` → count as (source, other, count)."""
    found = []
    for field, count in fields.items():
        source, _, other = field.partition(":")
        found.append((source, other, count))
    return found
