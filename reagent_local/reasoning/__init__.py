"""The ReAgent loop: a question's run carried out from the roles' decisions.

``driver`` runs one question (plan, waves of steps, rounds on the channel, the supervisor's
rollbacks); ``roads`` decides the second road for it; ``steps`` and
``plan`` hold the run's state; ``team`` builds the six roles, ``calls`` accounts their
model calls; ``outcome`` closes the run into an ``answer.Answer``; ``pipeline`` and
``wiring`` make a question's run from configuration.
"""
