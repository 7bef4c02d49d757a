// @ts-check
/**
 * ESLint rule `decider/appends-through-handler`: a call of `append` or `appendMany` on an event
 * store (a value with `appendMany` and `readStream`) outside the files the config exempts. Every
 * write of a feature goes through the one command handler (src/core/command-handler.ts), given
 * the feature's decider; only the handler and the store's own plumbing append. Type-aware: it
 * asks the TypeScript checker for the receiver's type, so `res.append` or `params.append` pass.
 */
export const appendsThroughHandler = {
  meta: {
    type: 'problem',
    docs: { description: 'events are appended only by the command handler, given a decider' },
    messages: { direct: '`{{name}}` on an event store outside the command handler: run a decider through handleCommand (src/core/command-handler.ts)' },
    schema: [],
  },
  /** @param {import('eslint').Rule.RuleContext} context */
  create(context) {
    const services = context.sourceCode.parserServices;
    if (!services?.program || !services.esTreeNodeToTSNodeMap) return {};
    const checker = services.program.getTypeChecker();
    return {
      /** @param {any} node */
      'CallExpression > MemberExpression.callee'(node) {
        const name = node.property.type === 'Identifier' ? node.property.name : null;
        if (name !== 'append' && name !== 'appendMany') return;
        const type = checker.getTypeAtLocation(services.esTreeNodeToTSNodeMap.get(node.object));
        if (!type.getProperty('appendMany') || !type.getProperty('readStream')) return;
        context.report({ node, messageId: 'direct', data: { name } });
      },
    };
  },
};

export default { rules: { 'appends-through-handler': appendsThroughHandler } };
