"""Sentence generator for the toy speech corpus: English, German, French and Spanish.

Everyday templates (appointments, dates, prices, numbers, lists, questions) are filled
with names and nouns drawn from small lists extracted from Debian's word-list packages
(wordlists/, see SOURCES.md there) and with numbers written as digits, so the model
must learn the spoken form of numbers in each language. The vocabulary is deliberately
closed (a few hundred words per language): held-out sentences are new combinations,
not new words, which is what a model this small trained for minutes can learn.

  /usr/bin/python3 scripts/toy-model/textgen.py [--lang en] [--n 10] [--seed 1]
"""
import argparse
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
LANGS = ("en", "de", "fr", "es")


def _read(name):
    with open(os.path.join(HERE, "wordlists", name), encoding="utf-8") as f:
        return [w.strip() for w in f if w.strip()]


NAMES = _read("names.txt")

# Closed vocabulary written for this generator (not taken from any other work).
COMMON = {
    "en": {
        "weekday": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
        "month": "January February March April May June July August September October November December".split(),
        "items": "apples books tickets chairs cups letters bottles eggs keys tomatoes".split(),
        "ordinal": "first second third fourth fifth sixth seventh eighth ninth tenth".split(),
    },
    "de": {
        "weekday": "Montag Dienstag Mittwoch Donnerstag Freitag Samstag Sonntag".split(),
        "month": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split(),
        "items": "Äpfel Bücher Karten Stühle Tassen Briefe Flaschen Eier Schlüssel Tomaten".split(),
        "ordinal": "ersten zweiten dritten vierten fünften sechsten siebten achten neunten zehnten".split(),
    },
    "fr": {
        "weekday": "lundi mardi mercredi jeudi vendredi samedi dimanche".split(),
        "month": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split(),
        "items": "pommes livres billets chaises tasses lettres bouteilles oranges clés tomates".split(),
        "ordinal": "premier deuxième troisième quatrième cinquième sixième septième huitième neuvième dixième".split(),
    },
    "es": {
        "weekday": "lunes martes miércoles jueves viernes sábado domingo".split(),
        "month": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
        "items": "manzanas libros billetes sillas tazas cartas botellas huevos llaves tomates".split(),
        "ordinal": "primer segundo tercer cuarto quinto sexto séptimo octavo noveno décimo".split(),
    },
}

# {noun} takes the language's article where the language needs one (the: en/fr/es;
# German nouns stand without one in these frames).
TEMPLATES = {
    "en": [
        "{name} will arrive on {weekday} at {hour} o'clock.",
        "The meeting is on {month} {day}, {year}.",
        "{name} bought {num} {items} for {price} dollars.",
        "Please call {name} before {hour} o'clock tomorrow.",
        "We talked about {noun} and {noun2}.",
        "The list says {noun}, {noun2} and {noun3}.",
        "It is {num} degrees outside today.",
        "The train to {name2} leaves at {hour} in the morning.",
        "Did you see {noun} yesterday?",
        "{name} was born in {year}.",
        "Thank you, {name}, see you on {weekday}.",
        "We need {num} more {items} for the kitchen.",
        "Room {num} is on the {ordinal} floor.",
        "I think {noun} is more important than {noun2}.",
        "Open the window, it is warm in here.",
        "{name} and {name2} met in {year} on a {weekday}.",
        "My phone number ends with {num} and {num2}.",
        "Her report on {noun} is {price} pages long.",
        "Where did {name} put the {items}?",
        "Good morning, my name is {name}.",
    ],
    "de": [
        "{name} kommt am {weekday} um {hour} Uhr an.",
        "Die Sitzung ist am {day}. {month} {year}.",
        "{name} hat {num} {items} für {price} Euro gekauft.",
        "Bitte ruf {name} vor {hour} Uhr an.",
        "Wir haben über {noun} und {noun2} gesprochen.",
        "Auf der Liste stehen {noun}, {noun2} und {noun3}.",
        "Es sind heute {num} Grad draußen.",
        "Der Zug nach {name2} fährt um {hour} Uhr ab.",
        "Hast du gestern {noun} gesehen?",
        "{name} wurde im Jahr {year} geboren.",
        "Danke, {name}, bis {weekday}.",
        "Wir brauchen noch {num} {items} für die Küche.",
        "Das Zimmer {num} liegt im {ordinal} Stock.",
        "Ich glaube, {noun} ist wichtiger als {noun2}.",
        "Mach bitte das Fenster auf, es ist warm hier.",
        "{name} und {name2} haben sich {year} an einem {weekday} getroffen.",
        "Meine Nummer endet mit {num} und {num2}.",
        "Ihr Bericht über {noun} hat {price} Seiten.",
        "Wo hat {name} die {items} hingelegt?",
        "Guten Morgen, ich heiße {name}.",
    ],
    "fr": [
        "{name} arrive {weekday} à {hour} heures.",
        "La réunion est le {day} {month} {year}.",
        "{name} a acheté {num} {items} pour {price} euros.",
        "Appelle {name} avant {hour} heures, s'il te plaît.",
        "Nous avons vu {noun} et {noun2}.",
        "Sur la liste il y a {noun}, {noun2} et {noun3}.",
        "Il fait {num} degrés dehors aujourd'hui.",
        "Le train pour {name2} part à {hour} heures.",
        "As-tu vu {noun} hier?",
        "{name} est né en {year}.",
        "Merci, {name}, à {weekday}.",
        "Il nous faut encore {num} {items} pour la cuisine.",
        "La chambre {num} est au {ordinal} étage.",
        "Je pense que {noun} est plus important que {noun2}.",
        "Ouvre la fenêtre, il fait chaud ici.",
        "{name} et {name2} se sont rencontrés en {year} un {weekday}.",
        "Mon numéro finit par {num} et {num2}.",
        "Son rapport sur {noun} fait {price} pages.",
        "Où est-ce que {name} a mis les {items}?",
        "Bonjour, je m'appelle {name}.",
    ],
    "es": [
        "{name} llega el {weekday} a las {hour}.",
        "La reunión es el {day} de {month} de {year}.",
        "{name} compró {num} {items} por {price} euros.",
        "Llama a {name} antes de las {hour}, por favor.",
        "Vimos {noun} y {noun2}.",
        "En la lista están {noun}, {noun2} y {noun3}.",
        "Hoy hace {num} grados afuera.",
        "El tren a {name2} sale a las {hour} de la mañana.",
        "¿Viste {noun} ayer?",
        "{name} nació en {year}.",
        "Gracias, {name}, hasta el {weekday}.",
        "Necesitamos {num} {items} más para la cocina.",
        "La habitación {num} está en el {ordinal} piso.",
        "Creo que {noun} es más importante que {noun2}.",
        "Abre la ventana, hace calor aquí.",
        "{name} y {name2} se conocieron en {year} un {weekday}.",
        "Mi número termina en {num} y {num2}.",
        "Su informe sobre {noun} tiene {price} páginas.",
        "¿Dónde puso {name} las {items}?",
        "Buenos días, me llamo {name}.",
    ],
}


class Generator:
    """Draws sentences for one language from a seeded random stream."""

    def __init__(self, lang, seed):
        if lang not in LANGS:
            raise ValueError(f"unknown language {lang!r}; expected one of {LANGS}")
        self.lang = lang
        self.rng = random.Random(f"{lang}-{seed}")
        self.common = COMMON[lang]
        self.nouns = self._nouns_with_articles(lang)

    @staticmethod
    def _nouns_with_articles(lang):
        if lang == "en":
            return ["the " + w for w in _read("en_nouns.txt")]
        if lang == "de":
            return _read("de_nouns.txt")
        fem, masc = {"fr": ("la ", "le "), "es": ("la ", "el ")}[lang]
        return [fem + w for w in _read(f"{lang}_nouns_f.txt")] + [masc + w for w in _read(f"{lang}_nouns_m.txt")]

    def _slots(self):
        r = self.rng
        nouns = r.sample(self.nouns, 3)
        names = r.sample(NAMES, 2)
        # Spanish "a las 1" is wrong ("a la una"), so hours start at 2 there.
        low_hour = 2 if self.lang == "es" else 1
        return {
            "name": names[0], "name2": names[1],
            "noun": nouns[0], "noun2": nouns[1], "noun3": nouns[2],
            "weekday": r.choice(self.common["weekday"]), "month": r.choice(self.common["month"]),
            "items": r.choice(self.common["items"]), "ordinal": r.choice(self.common["ordinal"]),
            "num": str(r.randint(2, 99)), "num2": str(r.randint(10, 99)),
            "price": str(r.choice([r.randint(2, 99), r.randint(100, 999)])),
            "year": str(r.randint(1950, 2029)), "day": str(r.randint(1, 28)),
            "hour": str(r.randint(low_hour, 12)),
        }

    def sentence(self):
        text = self.rng.choice(TEMPLATES[self.lang]).format(**self._slots())
        return text[0].upper() + text[1:] if text[0].isalpha() else text

    def utterance(self):
        """One clip's text: usually one sentence, sometimes two for longer clips."""
        if self.rng.random() < 0.15:
            return self.sentence() + " " + self.sentence()
        return self.sentence()


def sentences(lang, seed, count, exclude=frozenset()):
    """`count` distinct utterances, none of them in `exclude`."""
    gen = Generator(lang, seed)
    out, seen = [], set(exclude)
    tries = 0
    while len(out) < count:
        tries += 1
        if tries > count * 20:
            raise RuntimeError(f"[textgen] could not draw {count} distinct {lang} utterances; lower the count")
        text = gen.utterance()
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", default=None)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for lang in [args.lang] if args.lang else LANGS:
        for s in sentences(lang, args.seed, args.n):
            print(f"{lang}\t{s}")


if __name__ == "__main__":
    main()
