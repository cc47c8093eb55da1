"""Failures the knowledge base files under this family's categories (see
rules/_known_failure.py): named at the user's line with what the known error means."""

from __future__ import annotations

from hangdoctor.rules._known_failure import KnownErrorFailure
from hangdoctor.taxonomy import Category


class KnownRendezvousFailure(KnownErrorFailure):
    """the job failed of a known error of ranks that could not meet

    Fires when: the job failed and its exception is a known rendezvous or store error (a barrier or
    store that timed out waiting for clients, a socket that could not connect, an address in use):
    names it at your line, with what it means and the fix

    Why: Ranks meet through a store before any collective; when one cannot reach it or never
    arrives, the others time out in the store. The error's wording says which side failed.
    """

    id = "HD394"
    category = Category.DISTRIBUTED_RENDEZVOUS


class KnownTransportFailure(KnownErrorFailure):
    """the job failed of a known error of the transport between ranks

    Fires when: the job failed and its exception is a known NCCL or gloo transport error (a
    connection reset or refused, an unhandled system error): names it at your line, with what it
    means and the fix

    Why: A collective's transport reports a peer's failure or a network fault as a socket error; the
    known error says which, and what to check (interfaces, firewalls, a peer that died first).
    """

    id = "HD395"
    category = Category.DISTRIBUTED_NETWORK


class KnownRankExitFailure(KnownErrorFailure):
    """the job failed of a known error that says a rank exited

    Fires when: the job failed and its exception is a known error saying a rank or worker process
    exited: names it at your line, with what it means and the fix

    Why: When one rank exits, the launcher or the peers report it in their own words; the known
    error says what that report means and where the first failure is.
    """

    id = "HD396"
    category = Category.DISTRIBUTED_RANK_EXITED


class KnownCollectiveTimeoutFailure(KnownErrorFailure):
    """the job failed of a known error of a collective that timed out

    Fires when: the job failed and its exception is a known collective timeout (a watchdog that
    caught a collective running too long): names it at your line, with what it means and the fix

    Why: A collective that outlives its timeout is stopped by the watchdog; the known error says
    what the timeout measures and what usually keeps a rank away.
    """

    id = "HD397"
    category = Category.DISTRIBUTED_COLLECTIVE_TIMEOUT
