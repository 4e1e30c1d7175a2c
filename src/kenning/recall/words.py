"""Word lists recall reads: words that carry no topic, irregular forms of a verb or noun
that the stemmer does not join, words used for each other exactly, and the words of a
request rather than its topic. Broader groups, kinds and phrases are in `thesaurus.py`.

Kept general on purpose: a word belongs here for how it is used in ordinary speech or in
most codebases, never to fit one memory.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words, chat filler, and the generic verbs and nouns of a request.
STOP_WORDS = _words(
    """
    a able about above actually after again against ah all already also am an and any
    anybody anyone anything are aren around as ask asked at back be because been before
    being below best better between bit both btw but by can cannot cant code could
    couldn couldnt d did didn didnt do does doesn doesnt doing don done dont down during
    e each eg either else etc even ever every everyone everything few file files fine
    first for from further g get gets go going gonna good got great had hadn happen
    happened happens has hasn have haven having he hello help her here hers herself hey
    hi him himself his hmm how however i id ie if im in instead into is isn it its
    itself ive just kind kinda know last let lets like ll lol look looking looks lot lots
    m made make many maybe me mention mentioned might more most much must mustn my
    myself need needs new next no nope nor not nothing now o of off oh ok okay on once
    one ones only or other ought our ours ourselves out over own please pls plz probably
    re real really right s said same say says see shall shan she should shouldn
    shouldnt so some somebody someone something still stuff such sure t take tell thank
    thanks thx than that the their theirs them themselves then there these they thing
    things think this those though through time to too tried try trying two ty under
    until up upon us use used using ve very via wanna want wanted wants was wasn way we
    well were weren what whats when where whether which while who whom why will with won
    wont work working works would wouldn wouldnt wow y yeah yep yes yet you your yours
    yourself yourselves
    """
)

# Forms the Porter stemmer leaves apart ("bought" is not "buy"): one lemma, full weight.
FORMS = tuple(
    _words(group)
    for group in """
    buy bought|run ran|win won|lose lost|eat ate eaten|drive drove driven|fly flew flown
    |swim swam swum|break broke broken|choose chose chosen|steal stole stolen
    |fall fell fallen|catch caught|teach taught|bring brought|leave left|keep kept
    |build built|send sent|spend spent|begin began begun|hear heard|hold held
    |ride rode ridden|wear wore worn|wake woke woken|grow grew grown|draw drew drawn
    |throw threw thrown|hide hid hidden|shake shook shaken|forget forgot forgotten
    |write wrote written|sing sang sung|find found|give gave given|meet met|feel felt
    |sell sold|pay paid|sleep slept|lend lent|fight fought|seek sought|sit sat
    |stand stood|understand understood|speak spoke spoken|freeze froze frozen
    |hang hung|blow blew blown|stick stuck|spin spun|dig dug|feed fed|lead led
    |bind bound|strike struck|sink sank sunk|shrink shrank shrunk|bitten bite
    |tear tore torn|slide slid|risen rise|forbid forbade forbidden
    |overwrite overwrote overwritten|rewrite rewrote rewritten|undo undid undone
    |redo redid redone|withdraw withdrew withdrawn|seen see|take took taken
    |show showed shown|tell told|mean meant|deal dealt|light lit|shoot shot
    |child children|mouse mice|person people|foot feet|tooth teeth|man men|woman women
    |index indices|matrix matrices|vertex vertices|criterion criteria
    |schema schemata|analysis analyses|basis bases
    """.replace("\n", " ").split("|")
)

# Words used for each other exactly: abbreviations, then coding words, then everyday
# ones. Comparing two rules (statements.py) reads these; recall also reads the broader
# groups of thesaurus.py.
SYNONYMS = EXACT = tuple(
    _words(group)
    for group in """
    db database databases|prod production|repo repos repository repositories
    |auth authentication authenticate login logins signin|authz authorization
    authorisation permission permissions|deps dependency dependencies|config configs
    configuration configurations settings setting cfg conf|env envs environment
    environments|k8s kubernetes kube|integ integration|msg msgs message messages
    |pr prs|infra infrastructure|perf performance|doc docs documentation|btn button
    buttons|img image images pic pics picture pictures photo photos|svc service services
    |fn func function functions|var vars variable variables|arg args argument arguments
    param params parameter parameters|err error errors|tz timezone timezones
    |i18n translation translations localization localisation internationalization
    |a11y accessibility|lib libs library libraries|pkg pkgs package packages
    |dir dirs directory directories folder folders|tmp temp temporary|impl implementation
    |req request requests|resp response responses|ts typescript|js javascript|py python
    |golang go|bq bigquery|gh github|acct account accounts|num number|max maximum
    |min minimum|util utils utility utilities helper helpers|cred creds credential
    credentials secret secrets|pwd password passwords|toggle toggles flag flags
    |throttle throttling ratelimit|flaky flake flakes intermittent intermittently
    |spec specs test tests|log logs logging logger|mail email emails|upgrade upgrades
    bump bumps|remove delete erase purge|wipe flush|crash crashes crashing|app apps
    application applications|endpoint endpoints route routes|job jobs task tasks
    |cache caches caching cached|lint linter linting|notif notifs notification
    notifications|sub subs subscription subscriptions|mock mocks mocking mocked stub
    stubs stubbing fake fakes faking|deploy deploys deployed deploying deployment
    deployments release ship shipping rollout|dupe dupes duplicate duplicates dedupe
    dedup|tbl table tables|col cols column columns|idx index indexes indices|migration
    migrations migrate|dev development|mem memory|prev previous|sec security
    |vuln vulnerability vulnerabilities|fe frontend
    |be backend|ui interface|slow sluggish|broken breaks failing failure
    |fast faster speed speedup quicker optimize optimise optimizing optimising
    optimization|gen generate generated regen regenerate regenerated
    |mom mum mother mommy mummy|dad father daddy|kid kids child|grandma grandmother gran
    granny nan nana|grandpa grandfather grandad granddad|flat apartment|bike bicycle
    |car vehicle|job career occupation profession|gift present presents gifts
    |trip travel holiday holidays vacation journey|movie film|doctor physician gp
    |sick ill|scared afraid frightened terrified|begin start|shop store|friend mate
    buddy pal|wedding marriage married marry|baby babies infant newborn|dog puppy pup
    |cat kitten|house home|exam test|salary pay wage wages|hurt injured injury
    |book novel books novels|class course lesson lessons classes courses|big large huge
    |small little tiny|finish finished complete completed|quit resign resigned
    |move moved moving relocate relocated relocating|phone mobile
    """.replace("\n", " ").split("|")
)


# Words of a request rather than its topic ("explain this function", "add a column"):
# they count, at GENERIC_WEIGHT, so a memory that shares only them stays out.
GENERIC_WORDS = _words(
    """
    add adding added call calls change changed changes changing class classes convert
    create created creating difference does explain fix fixed fixing function functions
    generic implement item items line lines list lists mean meaning means method methods
    name names part print problem question remove rename return show step string strings
    thing update updated value values variable variables write writes writing wrote
    written
    three four five six seven eight nine ten eleven twelve twenty thirty fifty
    hundred thousand million second third half
    """
)

# Words of the stop list that can be a topic in code ("the config file", "a time zone",
# "new code"): recall counts them as request words rather than dropping them.
TOPICAL_STOP = _words(
    """
    code file files time work working works new first last next
    """
)
