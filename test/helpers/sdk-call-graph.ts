import * as path from 'node:path';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const ADAPTERS = path.join(ROOT, 'src', 'adapters', 'aws') + path.sep;
/** Code a Lambda bundle can run: calls into anything else (node_modules, the CLI) are not followed. */
const FOLLOWED = ['src', 'functions', 'contract'].map((dir) => path.join(ROOT, dir) + path.sep);

/** An AWS SDK command a function's code can send: its package and class, where it is made. */
export interface SdkCommand {
  /** e.g. `@aws-sdk/lib-dynamodb` */
  readonly sdkPackage: string;
  /** e.g. `UpdateCommand` */
  readonly command: string;
  /** The project file whose code makes it, relative to the root. */
  readonly file: string;
  /**
   * Every project file with code on some path from the handler to where the command is made (that
   * file included), relative to the root and sorted: which use case asked for it. An adapter
   * serving several resources (one Secrets Manager store for the institution credential, the
   * webhook secret and the company keys) is told apart by the code that calls it.
   */
  readonly callers: string[];
}

export interface FunctionSdkCalls {
  readonly commands: SdkCommand[];
  /**
   * Calls that were not followed: through a function-typed value (a callback, whose body is walked
   * where it is written), a port no adapter `implements`, or nothing the checker could resolve.
   */
  readonly notFollowed: string[];
}

const isFollowed = (file: string) => FOLLOWED.some((dir) => file.startsWith(dir));

type Body = ts.FunctionLikeDeclaration | ts.ClassDeclaration | ts.SourceFile;

/**
 * The AWS SDK commands each handler's code can send, from a static call graph (issue: a role
 * missing an action its code path needs is only found in AWS, as AccessDenied).
 *
 * From `functions/<name>/handler.ts`, every call and `new` is resolved by the type checker and its
 * declaration walked, nested functions included (a closure made on a path is counted as called on
 * it). A call to a port's method (an interface member, no body) is followed into the method of
 * that name in every class of `src/adapters/aws` that `implements` the port: the adapters are the
 * only implementations a Lambda bundle wires. Every branch counts, so the result is what the code
 * CAN send, a superset of what one invocation sends. Not seen: calls through a function-typed
 * value (the closure's maker is walked instead), a port no adapter `implements`, and calls the
 * checker cannot resolve (listed in `notFollowed`).
 */
export function sdkCallsOfHandlers(handlerDirs: readonly string[]): Map<string, FunctionSdkCalls> {
  const entries = handlerDirs.map((dir) => path.join(ROOT, 'functions', dir, 'handler.ts'));
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.json did not parse');
  const program = ts.createProgram(entries, { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const implementations = adapterImplementations(program);

  const result = new Map<string, FunctionSdkCalls>();
  for (const [i, dir] of handlerDirs.entries()) {
    const source = program.getSourceFile(entries[i]!);
    if (!source) throw new Error(`no handler at functions/${dir}/handler.ts`);
    const seen = new Set<ts.Node>();
    const commands = new Map<string, Omit<SdkCommand, 'callers'>>();
    /** Where each command is made: the bodies whose walk met it. */
    const madeIn = new Map<string, Set<ts.Node>>();
    /** body -> the bodies whose walk led to it (every edge, not only the first one found). */
    const calledFrom = new Map<ts.Node, Set<ts.Node>>();
    const notFollowed = new Set<string>();
    const queue: Body[] = [source];
    let current: ts.Node = source;
    const enqueue = (node: ts.Node | undefined) => {
      if (!node || !isFollowed(node.getSourceFile().fileName)) return;
      if (node !== current) calledFrom.set(node, (calledFrom.get(node) ?? new Set()).add(current));
      if (seen.has(node)) return;
      seen.add(node);
      queue.push(node as Body);
    };
    const follow = (declaration: ts.Declaration) => {
      if (ts.isClassDeclaration(declaration)) return enqueueClassInit(declaration);
      if ((ts.isMethodSignature(declaration) || ts.isPropertySignature(declaration)) && ts.isInterfaceDeclaration(declaration.parent)) {
        const name = declaration.name.getText();
        for (const method of implementations.get(`${declaration.parent.name.text}.${name}`) ?? []) enqueue(method);
        return;
      }
      if (ts.isPropertyDeclaration(declaration) && declaration.initializer) return enqueue(declaration.initializer);
      if (ts.isVariableDeclaration(declaration) && declaration.initializer) return enqueue(declaration.initializer);
      if ('body' in declaration && declaration.body) return enqueue(declaration);
      if (isFollowed(declaration.getSourceFile().fileName)) {
        notFollowed.add(`${path.relative(ROOT, declaration.getSourceFile().fileName)}: ${declaration.getText().split('\n')[0]}`);
      }
    };
    const enqueueClassInit = (cls: ts.ClassDeclaration) => {
      for (const member of cls.members) {
        if (ts.isConstructorDeclaration(member) && member.body) enqueue(member);
        if (
          ts.isPropertyDeclaration(member) &&
          member.initializer &&
          !member.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)
        ) {
          enqueue(member.initializer);
        }
      }
      // The base class's constructor runs too.
      const base = cls.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
      const baseSymbol = base && resolveAlias(checker, checker.getSymbolAtLocation(base.expression));
      for (const declaration of baseSymbol?.declarations ?? []) follow(declaration);
    };

    while (queue.length > 0) {
      const body = queue.pop()!;
      current = body;
      const visit = (node: ts.Node): void => {
        if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
          const command = sdkCommandOf(checker, node);
          if (command) {
            const key = `${command.sdkPackage}:${command.command}:${command.file}`;
            commands.set(key, command);
            madeIn.set(key, (madeIn.get(key) ?? new Set()).add(body));
          } else if (ts.isNewExpression(node)) {
            const symbol = resolveAlias(checker, checker.getSymbolAtLocation(node.expression));
            const classes = (symbol?.declarations ?? []).filter(ts.isClassDeclaration);
            for (const cls of classes) enqueueClassInit(cls);
          } else {
            const declaration = checker.getResolvedSignature(node)?.declaration;
            if (declaration && !ts.isJSDocSignature(declaration)) follow(declaration);
            else notFollowed.add(`${path.relative(ROOT, node.getSourceFile().fileName)}: ${node.getText().split('\n')[0]}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      if (ts.isSourceFile(body)) {
        ts.forEachChild(body, visit);
      } else {
        visit(body);
      }
    }
    const callersOf = (bodies: Set<ts.Node>): string[] => {
      const reached = new Set<ts.Node>(bodies);
      const pending = [...bodies];
      while (pending.length > 0) {
        for (const caller of calledFrom.get(pending.pop()!) ?? []) {
          if (reached.has(caller)) continue;
          reached.add(caller);
          pending.push(caller);
        }
      }
      return [...new Set([...reached].map((node) => path.relative(ROOT, node.getSourceFile().fileName)))].sort();
    };
    result.set(dir, {
      commands: [...commands].map(([key, command]) => ({ ...command, callers: callersOf(madeIn.get(key)!) })),
      notFollowed: [...notFollowed],
    });
  }
  return result;
}

function resolveAlias(checker: ts.TypeChecker, symbol: ts.Symbol | undefined): ts.Symbol | undefined {
  return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/** `new XCommand(...)` of a class an `@aws-sdk/*` package declares. */
function sdkCommandOf(checker: ts.TypeChecker, node: ts.CallExpression | ts.NewExpression): Omit<SdkCommand, 'callers'> | undefined {
  if (!ts.isNewExpression(node)) return undefined;
  const symbol = resolveAlias(checker, checker.getSymbolAtLocation(node.expression));
  const declaration = symbol?.declarations?.[0];
  if (!symbol || !declaration || !symbol.name.endsWith('Command')) return undefined;
  const match = /node_modules\/(@aws-sdk\/[^/]+)\//.exec(declaration.getSourceFile().fileName);
  if (!match) return undefined;
  return { sdkPackage: match[1]!, command: symbol.name, file: path.relative(ROOT, node.getSourceFile().fileName) };
}

/** `Port.method` -> the methods of that name in the classes of src/adapters/aws that implement Port. */
function adapterImplementations(program: ts.Program): Map<string, ts.Node[]> {
  const byMember = new Map<string, ts.Node[]>();
  for (const source of program.getSourceFiles()) {
    if (!source.fileName.startsWith(ADAPTERS)) continue;
    for (const statement of source.statements) {
      if (!ts.isClassDeclaration(statement)) continue;
      const ports = (statement.heritageClauses ?? [])
        .filter((h) => h.token === ts.SyntaxKind.ImplementsKeyword)
        .flatMap((h) => h.types.map((t) => (ts.isIdentifier(t.expression) ? t.expression.text : t.expression.getText())));
      for (const member of statement.members) {
        if (!member.name || !(ts.isMethodDeclaration(member) || ts.isPropertyDeclaration(member) || ts.isGetAccessor(member))) continue;
        for (const port of ports) {
          const key = `${port}.${member.name.getText()}`;
          byMember.set(key, [...(byMember.get(key) ?? []), (ts.isPropertyDeclaration(member) && member.initializer) || member]);
        }
      }
    }
  }
  return byMember;
}
