// The operator console's page: each message from the server (docs/console.md, "Wire protocol") to the module
// that shows it. connection.js holds the socket, map.js the map, as_of.js the map as of a past time,
// conversation.js the questions and commands, panels.js STOP and the side panels; every text from the scene or the model reaches the DOM as text only.
import { onSceneAt, onSceneAtError } from "./as_of.js";
import { connect, keepSession } from "./connection.js";
import { logError, onAnswer, onCommand, onError, onResult, onStage } from "./conversation.js";
import { $, setText } from "./dom.js";
import { onObject, onRobot, onScene, startMap } from "./map.js";
import { offerHistoryUpTo, onChanges, onCorrections, onStatus, onStop } from "./panels.js";

const handlers = {
  hello(message) {
    setText($("namespace"), message.namespace);
    keepSession(message.session);
    document.body.dataset.secured = message.secured ? "true" : "false";
    offerHistoryUpTo(message.history_max_s);
  },
  scene: onScene,
  robot: onRobot,
  stop: onStop,
  status: onStatus,
  stage: onStage,
  result: onResult,
  answer: onAnswer,
  object: onObject,
  command: onCommand,
  changes: onChanges,
  corrections: onCorrections,
  scene_at: onSceneAt,
  error(message) {
    if (message.about === "scene_at") onSceneAtError();
    onError(message);
  },
};

startMap();
connect((message, received) => {
  const handler = handlers[message.type];
  if (handler) handler(message, received);
}, logError);
