"""The parts of ``Client.local()`` beside its indexes and jobs: the event log, webhooks
and the operations methods register (``client.events``, ``client.webhooks``,
``client.operations``), over the service in this process. ``local.py`` names them too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hopindex.api.client.models import OperationInfo, WebhookInfo
from hopindex.core.errors import NotFoundError
from hopindex.core.ids import validate_index_name

if TYPE_CHECKING:
    from hopindex.api.events import Follower
    from hopindex.api.service import Hopindex
    from hopindex.core.events import Event
    from hopindex.methods.operations import MethodOperation


class LocalClient(Protocol):
    """What the parts read of the local client (local.py's ``LocalClient``, which
    imports them): the service in this process."""

    @property
    def service(self) -> Hopindex: ...


class LocalEvents:
    def __init__(self, client: LocalClient) -> None:
        self._client = client

    def iterate_events(self, index: str | None = None, after_id: str | None = None, *,
                       follow: bool = False) -> Iterator[Event]:
        from hopindex.api.events import follow_events

        if index is not None:
            validate_index_name(index)
        return follow_events(self._client.service.backends.events, index=index,
                             after_id=after_id, follow=follow)

    def follower(self, index: str | None, after_id: str | None) -> Follower:
        """A reader of the log page by page (the HTTP API's event stream, which reads
        each page on its thread pool instead of blocking in a wait)."""
        from hopindex.api.events import Follower

        if index is not None:
            validate_index_name(index)
        return Follower(self._client.service.backends.events, index, after_id)


class LocalWebhooks:
    def __init__(self, client: LocalClient) -> None:
        self._client = client

    def add_webhook(self, index: str, url: str, secret: str | None = None) -> WebhookInfo:
        from hopindex.api.events import register_webhook, webhook_view

        service = self._client.service
        validate_index_name(index)
        hook = register_webhook(service.backends.events, index, url, secret,
                                allow_private=service.settings.webhook_allow_private)
        return WebhookInfo.model_validate(webhook_view(hook, with_secret=True))

    def list_webhooks(self, index: str | None = None) -> list[WebhookInfo]:
        from hopindex.api.events import webhook_view

        if index is not None:
            validate_index_name(index)
        return [WebhookInfo.model_validate(webhook_view(h))
                for h in self._client.service.backends.events.list_webhooks(index)]

    def remove_webhook(self, webhook_id: str) -> None:
        if not self._client.service.backends.events.delete_webhook(webhook_id):
            raise NotFoundError(f"no webhook {webhook_id!r}")


class LocalOperations:
    def __init__(self, client: LocalClient) -> None:
        self._client = client

    def list_operations(self, method: str | None = None) -> list[OperationInfo]:
        from hopindex.methods.registry import list_operations

        return [OperationInfo.model_validate(o.describe()) for o in list_operations(method)]

    def find_operation(self, index: str, name: str) -> MethodOperation:
        """Operation ``name`` of the index's method, as ``run_operation`` finds it (an
        unknown index: ``NotFoundError``; no such operation for its method: an
        ``InvalidInputError`` naming ``method``), so that a front door can check the
        access it needs before running it."""
        from hopindex.methods.registry import get_operation

        info = self._client.service.require_index(index)
        return get_operation(index, info.method, name)

    def run_operation(self, index: str, name: str,
                      params: Mapping[str, str] | None = None) -> Any:
        from hopindex.methods.registry import get_operation

        service = self._client.service
        info = service.require_index(index)
        operation = get_operation(index, info.method, name)
        return operation.run(service.backends.state, info.name,
                             operation.check_params(params or {}))
