/**
 * The few DOM shapes the web extraction uses, typed locally: the project
 * compiles without the DOM lib (it is a Node CLI), and linkedom's documents
 * provide exactly these members.
 */
export interface DomNode {
  nodeType: number;
  nodeValue: string | null;
  firstChild: DomNode | null;
  nextSibling: DomNode | null;
  parentNode: DomNode | null;
  removeChild(child: DomNode): unknown;
}

export interface DomElement extends DomNode {
  tagName: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  remove(): void;
}

export interface DomDocument extends DomNode {
  title: string;
  body: DomElement | null;
  documentElement: DomElement;
  querySelectorAll(selector: string): Iterable<DomElement> & ArrayLike<DomElement>;
}
