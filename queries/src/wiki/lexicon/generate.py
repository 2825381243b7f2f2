"""Writes not_nouns.txt: the English words WordNet 3.0 knows only as forms of verbs, adjectives and adverbs
in common use (a lemma tagged at least once in its sense-tagged corpus, `cntlist.rev`), never as a noun or a
form of one. `queries/src/wiki/lexicon.rs` reads it; LICENSE-WordNet is WordNet's license.

    apt-get install wordnet-base
    python3 queries/src/wiki/lexicon/generate.py /usr/share/wordnet/ > queries/src/wiki/lexicon/not_nouns.txt
"""
import collections
import re
import sys

WORDNET = sys.argv[1] if len(sys.argv) > 1 else '/usr/share/wordnet/'
PARTS = ['noun', 'verb', 'adj', 'adv']
# WordNet's own morphology: the endings `morphy` detaches, by part of speech.
DETACH = {
    'noun': [('s', ''), ('ses', 's'), ('xes', 'x'), ('zes', 'z'), ('ches', 'ch'), ('shes', 'sh'), ('men', 'man'),
             ('ies', 'y')],
    'verb': [('s', ''), ('ies', 'y'), ('es', 'e'), ('es', ''), ('ed', 'e'), ('ed', ''), ('ing', 'e'), ('ing', '')],
    'adj': [('er', ''), ('est', ''), ('er', 'e'), ('est', 'e')],
    'adv': [],
}

lemmas = {part: set() for part in PARTS}
irregular = {part: collections.defaultdict(set) for part in PARTS}
for part in PARTS:
    for line in open(WORDNET + 'index.' + part):
        if not line.startswith(' '):
            lemmas[part].add(line.split(' ')[0])
    for line in open(WORDNET + part + '.exc'):
        surface, *bases = line.split()
        irregular[part][surface].update(bases)
tagged = collections.Counter()
for line in open(WORDNET + 'cntlist.rev'):
    key, _sense, count = line.split()
    tagged[key.split('%')[0]] += int(count)


def bases(word):
    """The lemmas `word` can be a form of, by part of speech."""
    found = {part: set() for part in PARTS}
    for part in PARTS:
        candidates = {word} | irregular[part].get(word, set())
        candidates |= {word[:len(word) - len(end)] + base for end, base in DETACH[part] if word.endswith(end)}
        found[part] = candidates & lemmas[part]
    return found


def not_a_noun(word):
    """No lemma of `word` is a noun, and one is a verb, adjective or adverb in common use."""
    found = bases(word)
    every = set().union(*found.values())
    if every & lemmas['noun']:
        return False
    return any(tagged[lemma] >= 1 for lemma in every)


def forms(lemma):
    """The lemma and its regular and irregular inflections."""
    yield lemma
    if lemma in lemmas['verb']:
        if re.search('(s|x|z|ch|sh)$', lemma):
            yield lemma + 'es'
        elif re.search('[^aeiou]y$', lemma):
            yield lemma[:-1] + 'ies'
        else:
            yield lemma + 's'
        if lemma.endswith('e'):
            yield from (lemma + 'd', lemma[:-1] + 'ing')
        elif re.search('[^aeiou]y$', lemma):
            yield from (lemma[:-1] + 'ied', lemma + 'ing')
        else:
            yield from (lemma + 'ed', lemma + 'ing')
    if lemma in lemmas['adj'] and len(lemma) <= 6:
        stem = lemma[:-1] if lemma.endswith('e') else lemma
        yield from (stem + 'er', stem + 'est')
    for part in ('verb', 'adj'):
        yield from (surface for surface, of in irregular[part].items() if lemma in of)


words = set()
for part in ('verb', 'adj', 'adv'):
    for lemma in lemmas[part]:
        if re.fullmatch('[a-z]+', lemma) and tagged[lemma] >= 1:
            words.update(form for form in forms(lemma) if re.fullmatch('[a-z]+', form) and not_a_noun(form))
sys.stdout.write(''.join(word + '\n' for word in sorted(words)))
