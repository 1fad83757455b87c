"""The typed dependencies every REST route takes its ledger and settings from (:data:`LedgerDep`,
:data:`SettingsDep`, and the app's :data:`MetricsDep`): what ``api/rest/app.py`` put on the app's state, one per app.

Routers are built without arguments and declare what they need, so a route reads the same way in every module.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from prometheus_client import CollectorRegistry

from api.settings import Settings
from ledger.service import Ledger


async def get_ledger(request: Request) -> Ledger:  # async: resolved on the event loop, no thread hop
    """The ledger of the app serving ``request``."""
    ledger: Ledger = request.app.state.ledger
    return ledger


async def get_settings(request: Request) -> Settings:
    """The settings of the app serving ``request``."""
    settings: Settings = request.app.state.settings
    return settings


async def get_metrics(request: Request) -> CollectorRegistry:
    """The Prometheus registry of the app serving ``request`` (``api.rest.metrics.registry_for``)."""
    registry: CollectorRegistry = request.app.state.metrics
    return registry


LedgerDep = Annotated[Ledger, Depends(get_ledger)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
MetricsDep = Annotated[CollectorRegistry, Depends(get_metrics)]
