"""The prediction language: one class per answer kind, registered by the name a set file gives it.

An exercise's ``kind = "number"`` names a class here; :class:`tutor.model.catalog.Exercise`
holds an instance of it, built with the exercise's own ``choices``,
``answer_length``, ``answer_items`` and ``tolerance``. Everything that reads,
shows or compares an answer asks that object:

* :meth:`AnswerKind.parse` reads what a learner typed: lenient in form,
  strict in meaning. An answer that cannot be read raises
  :class:`AnswerError`, whose one sentence names the expected format
  (:meth:`AnswerKind.format_hint`);
* :meth:`AnswerKind.agrees` grades a parsed *prediction* against an
  *observation* (what a check returns as ``observed``);
  :meth:`AnswerKind.same` compares two *observations* (two sides of one
  run), which is another question: NaN is the same as NaN, and a range is
  never an observation;
* :meth:`AnswerKind.show_prediction` and :meth:`AnswerKind.show_observation`
  write a value as a learner would type it;
* :meth:`AnswerKind.validate` checks the keys of a set file's entry that
  the kind reads, raising :class:`KindError` with the sentence the catalog
  puts after the entry's name.

========  ==========================================  =====================
kind      learner may type                            canonical value
========  ==========================================  =====================
choice    a choice id, e.g. ``b``                     ``"b"``
shape     ``(2, 7)``, ``2,7``, ``2x7``, ``[2, 7]``    ``[2, 7]``
number    ``2``, ``0.908918``, ``804,224``, ``1/3``   ``float``
range     ``0.2 to 0.3``, ``between 1e-3 and 1e-2``   ``(0.2, 0.3)``
bool      yes / no / true / false / y / n             ``True`` / ``False``
error     an exception class name, or ``none``        ``"RuntimeError"``
list      ``[0, 3, 1]``, ``0 3 1``, ``yes, no``       ``[0.0, 3.0, 1.0]``
text      anything non-empty                          the text
========  ==========================================  =====================

A new kind is one class in this package: subclass :class:`AnswerKind`, give
it a ``name`` and decorate it with :func:`register` (``Range`` in
``range.py`` is one). Pure: imports neither torch nor Textual.
"""

from tutor.model.answers.base import (ACTION_KEYS, KINDS, MAX_ANSWER_CHARS, NUMBER_KEYS, AnswerError, AnswerKind, KindError,
                                      kind_class, make, same_values, show_observed, validate)
from tutor.model.answers.kinds import Bool, Choice, ErrorName, Number, Shape, Text
from tutor.model.answers.lists import List
from tutor.model.answers.range import Range

__all__ = ["ACTION_KEYS", "KINDS", "MAX_ANSWER_CHARS", "NUMBER_KEYS", "AnswerError", "AnswerKind", "Bool", "Choice",
           "ErrorName", "KindError", "List", "Number", "Range", "Shape", "Text", "kind_class", "make", "same_values",
           "show_observed", "validate"]
