"""Set/GetForwardingPipelineConfig: verify a program against its P4Info, save, commit."""

from __future__ import annotations

import logging
from typing import Any

import grpc

from control_plane.p4runtime_api.p4.v1 import p4runtime_pb2
from emulation.targets.embedded.json_loader import PipelineError
from emulation.targets.embedded.p4info_map import P4InfoMap, bind
from emulation.targets.embedded.p4rt.state import ServerState
from emulation.targets.embedded.pipeline import Program, load_program

log = logging.getLogger("inart.embedded.p4rt")
A = p4runtime_pb2.SetForwardingPipelineConfigRequest
R = p4runtime_pb2.GetForwardingPipelineConfigRequest


def set_pipeline(state: ServerState, request: Any, context: grpc.ServicerContext) -> Any:
    state.check_writer(request, context)
    action = request.action
    if action == A.COMMIT:
        if state.saved is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "COMMIT without a saved config")
        assert state.saved is not None
        install(state, *state.saved)
        state.saved = None
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()
    if action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT):
        context.abort(grpc.StatusCode.UNIMPLEMENTED,
                      f"pipeline action {A.Action.Name(action)} is not supported")
    config = request.config
    try:
        program = load_program(config.p4_device_config)
        pmap = bind(config.p4info, program)
    except PipelineError as exc:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"pipeline refused: {exc}")
    if action == A.VERIFY_AND_SAVE:
        state.saved = (program, pmap, config)
    elif action == A.VERIFY_AND_COMMIT:
        install(state, program, pmap, config)
    return p4runtime_pb2.SetForwardingPipelineConfigResponse()


def install(state: ServerState, program: Program, pmap: P4InfoMap, config: Any) -> None:
    """Swap the program in; the PRE starts empty, as on a freshly configured bmv2."""
    with state.lock:
        state.switch.program = program
        state.switch.pre.groups.clear()
        state.switch.pre.expanded.clear()
        state.switch.pre.clones.clear()
        state.map = pmap
        stored = p4runtime_pb2.ForwardingPipelineConfig()
        stored.CopyFrom(config)
        state.config = stored
    log.info("pipeline installed: %d tables", len(program.tables))


def get_pipeline(state: ServerState, request: Any, context: grpc.ServicerContext) -> Any:
    state.check_device(request.device_id, context)
    resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
    cfg = state.config
    if cfg is None:
        return resp
    rt = request.response_type
    resp.config.cookie.CopyFrom(cfg.cookie)
    if rt in (R.ALL, R.P4INFO_AND_COOKIE):
        resp.config.p4info.CopyFrom(cfg.p4info)
    if rt in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
        resp.config.p4_device_config = cfg.p4_device_config
    return resp
